#version 450
// attention_flash_rb_key for head sizes up to 128 (see attention_flash_rb_key.glsl).
#extension GL_GOOGLE_include_directive : require
#define HSMAX 128u
#define BR 16u
#define BC 8u
#define TM 2u
#define CG_LOG2 3u // 8 invocations a row
#define KEY_PASS
#include "attention_flash_rb_backward.glsl"
#include "attention_flash_rb_key.glsl"
