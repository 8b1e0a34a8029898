// The int8 GEMM as a __dp4a CUDA tile with the group's epilogue (see
// fx.lowering.kernels.cuda.cuda_int8_gemm): CUDA C, with string.Template placeholders: ${name},
// ${sig} and ${args} (the parameters declared and passed), ${epilogue} (the group's epilogue at
// (i0, i1) given the int32 sum acc), ${A} and ${B} (the operands' parameters), ${M} ${N} ${K},
// the strides ${a_sm} ${a_sk} of A and ${b_sk} ${b_sn} of B, ${vec_a} and ${vec_b} (1 where
// 16-byte loads apply).
//
// Staging: thread t loads row t / 4 of the A tile (and of the B tile's columns), words
// (t % 4) * 4 .. + 3 of the chunk. Shared rows are padded by one word against bank conflicts.

#if !defined(__CUDACC__)
static inline int __dp4a(int a, int b, int c) {  /* (for running the source on a CPU) */
  for (int i = 0; i < 4; i++) c += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
  return c;
}
#endif
static __device__ __forceinline__ void ${name}_epilogue(int64_t i0, int64_t i1, int32_t acc,
                                                      ${sig}) {
${epilogue}
}
static __device__ __forceinline__ int ${name}_word(const int8_t* p, int64_t base, int64_t step,
                                                  int k, int K) {
  unsigned w = 0;
  for (int c = 0; c < 4; c++)
    if (k + c < K) w |= (unsigned)(uint8_t)p[base + (int64_t)(k + c) * step] << (8 * c);
  return (int)w;
}
extern "C" __global__ void __launch_bounds__(256) ${name}(${sig}) {
  __shared__ int As[64][17];
  __shared__ int Bs[64][17];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  const int lr = tid / 4, lw = (tid % 4) * 4;
  const int8_t* A = (const int8_t*)${A};
  const int8_t* B = (const int8_t*)${B};
  int acc[4][4];
  #pragma unroll
  for (int i = 0; i < 4; i++)
    #pragma unroll
    for (int j = 0; j < 4; j++) acc[i][j] = 0;
  for (int k0 = 0; k0 < ${K}; k0 += 64) {
    const int m = row0 + lr, n = col0 + lr;
    if (${vec_a} && m < ${M} && k0 + lw * 4 + 16 <= ${K}) {
      const int4 v = *reinterpret_cast<const int4*>(A + (int64_t)m * ${a_sm} + k0 + lw * 4);
      As[lr][lw] = v.x; As[lr][lw + 1] = v.y; As[lr][lw + 2] = v.z; As[lr][lw + 3] = v.w;
    } else {
      #pragma unroll
      for (int c = 0; c < 4; c++)
        As[lr][lw + c] = m < ${M} ? ${name}_word(A, (int64_t)m * ${a_sm}, ${a_sk},
                                               k0 + (lw + c) * 4, ${K}) : 0;
    }
    if (${vec_b} && n < ${N} && k0 + lw * 4 + 16 <= ${K}) {
      const int4 v = *reinterpret_cast<const int4*>(B + (int64_t)n * ${b_sn} + k0 + lw * 4);
      Bs[lr][lw] = v.x; Bs[lr][lw + 1] = v.y; Bs[lr][lw + 2] = v.z; Bs[lr][lw + 3] = v.w;
    } else {
      #pragma unroll
      for (int c = 0; c < 4; c++)
        Bs[lr][lw + c] = n < ${N} ? ${name}_word(B, (int64_t)n * ${b_sn}, ${b_sk},
                                               k0 + (lw + c) * 4, ${K}) : 0;
    }
    __syncthreads();
    #pragma unroll
    for (int w = 0; w < 16; w++) {
      int a[4], b[4];
      #pragma unroll
      for (int i = 0; i < 4; i++) a[i] = As[ty * 4 + i][w];
      #pragma unroll
      for (int j = 0; j < 4; j++) b[j] = Bs[tx + 16 * j][w];
      #pragma unroll
      for (int i = 0; i < 4; i++)
        #pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = __dp4a(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  #pragma unroll
  for (int i = 0; i < 4; i++) {
    const int m = row0 + ty * 4 + i;
    if (m >= ${M}) continue;
    #pragma unroll
    for (int j = 0; j < 4; j++) {
      const int n = col0 + tx + 16 * j;
      if (n < ${N}) ${name}_epilogue(m, n, acc[i][j], ${args});
    }
  }
}
