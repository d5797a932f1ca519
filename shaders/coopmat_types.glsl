// The cooperative-matrix names of VK_NV_cooperative_matrix, or of VK_KHR_cooperative_matrix
// where KHR is defined, so that one kernel source compiles for both: the operand types
// CM_A(rows, cols) and CM_B (float16) and the accumulator CM_ACC (float32), all of subgroup
// scope; CM_LOAD and CM_STORE(matrix, array, element offset, stride, layout) with layout
// CM_ROW_MAJOR or CM_COL_MAJOR; CM_MULADD(a, b, c) = a*b + c.
// Both name their scope gl_ScopeSubgroup, from GL_KHR_memory_scope_semantics.
#extension GL_KHR_memory_scope_semantics : require
#ifdef KHR
#extension GL_KHR_cooperative_matrix : require
#define CM_A(R, C) coopmat<float16_t, gl_ScopeSubgroup, R, C, gl_MatrixUseA>
#define CM_B(R, C) coopmat<float16_t, gl_ScopeSubgroup, R, C, gl_MatrixUseB>
#define CM_ACC(R, C) coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator>
#define CM_LOAD coopMatLoad
#define CM_STORE coopMatStore
#define CM_MULADD coopMatMulAdd
#define CM_ROW_MAJOR gl_CooperativeMatrixLayoutRowMajor
#define CM_COL_MAJOR gl_CooperativeMatrixLayoutColumnMajor
#else
#extension GL_NV_cooperative_matrix : require
#define CM_A(R, C) fcoopmatNV<16, gl_ScopeSubgroup, R, C>
#define CM_B(R, C) fcoopmatNV<16, gl_ScopeSubgroup, R, C>
#define CM_ACC(R, C) fcoopmatNV<32, gl_ScopeSubgroup, R, C>
#define CM_LOAD coopMatLoadNV
#define CM_STORE coopMatStoreNV
#define CM_MULADD coopMatMulAddNV
#define CM_ROW_MAJOR false
#define CM_COL_MAJOR true
#endif
