#version 450
// attention_flash_rb_key for head sizes up to 64 (see attention_flash_rb_key.glsl).
#extension GL_GOOGLE_include_directive : require
#define HSMAX 64u
#define BR 32u
#define BC 16u
#define TM 2u
#define CG_LOG2 2u // 4 invocations a row
#define KEY_PASS
#include "attention_flash_rb_backward.glsl"
#include "attention_flash_rb_key.glsl"
