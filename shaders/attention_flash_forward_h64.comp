#version 450
// attention_flash_forward for head sizes up to 64 (see attention_flash_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#define HSMAX 64u
#define BR 16u
#define BC 16u
#include "attention_flash_common.glsl"
#include "attention_flash_forward.glsl"
