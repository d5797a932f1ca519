#version 450
// attention_flash_key for head sizes up to 64 (see attention_flash_key.glsl).
#extension GL_GOOGLE_include_directive : require
#define HSMAX 64u
#define BR 16u
#define BC 8u
#define KEY_PASS
#include "attention_flash_common.glsl"
#include "attention_flash_backward.glsl"
#include "attention_flash_key.glsl"
