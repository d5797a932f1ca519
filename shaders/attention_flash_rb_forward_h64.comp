#version 450
// attention_flash_rb_forward for head sizes up to 64 (see attention_flash_rb_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#define HSMAX 64u
#define BR 64u
#define BC 16u
#define TM 4u
#define CG_LOG2 2u // 4 invocations a row
#include "attention_flash_rb_forward.glsl"
