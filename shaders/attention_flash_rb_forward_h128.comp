#version 450
// attention_flash_rb_forward for head sizes up to 128 (see attention_flash_rb_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#define HSMAX 128u
#define BR 32u
#define BC 8u
#define TM 4u
#define CG_LOG2 3u // 8 invocations a row
#include "attention_flash_rb_forward.glsl"
