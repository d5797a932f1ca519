#version 450
// attention_flash_rb_query for head sizes up to 128 (see attention_flash_rb_query.glsl).
#extension GL_GOOGLE_include_directive : require
#define HSMAX 128u
#define BR 16u
#define BC 8u
#define TM 2u
#define CG_LOG2 3u // 8 invocations a row
#include "attention_flash_rb_backward.glsl"
#include "attention_flash_rb_query.glsl"
