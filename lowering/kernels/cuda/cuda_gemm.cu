// The float GEMM as a tiled CUDA kernel with the group's epilogue (see
// fx.lowering.kernels.cuda.cuda_gemm): CUDA C, with string.Template placeholders: ${name}, ${sig}
// and ${args} (the parameters declared and passed), ${epilogue} (the group's epilogue at (i0,
// i1) given the float32 accumulator acc), ${A} and ${B} (the operands' parameters), ${M} ${N}
// ${K}, ${a_sm} and ${b_sk} (row strides), ${load_a} and ${load_b} (one element as float at
// gm, gk / gk, gn), ${vec_a} and ${vec_b} (1 where float4 loads apply).
//
// Thread t of the block owns rows ty*8..ty*8+7 and columns tx*8..tx*8+7 of the 128x128 tile
// (tx = t % 16, ty = t / 16). Loading a 128x8 A tile: thread t fetches row t/2, four k's
// starting at (t%2)*4. Loading an 8x128 B tile: thread t fetches k-row t/32, four columns
// starting at (t%32)*4. Shared tiles are stored k-major so the compute loop reads contiguous
// rows/columns.

static __device__ __forceinline__ void ${name}_epilogue(int64_t i0, int64_t i1, float acc, ${sig}) {
${epilogue}
}
extern "C" __global__ void __launch_bounds__(256) ${name}(${sig}) {
  __shared__ float As[2][8][128 + 4];
  __shared__ float Bs[2][8][128 + 4];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
  const int a_row = tid / 2, a_col = (tid % 2) * 4;
  const int b_row = tid / 32, b_col = (tid % 32) * 4;
  float acc[8][8];
  #pragma unroll
  for (int i = 0; i < 8; i++)
    #pragma unroll
    for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
  float ra[4], rb[4];

  auto fetch = [&](int k0) {
    const int gm = row0 + a_row;
    if (${vec_a} && gm < ${M} && k0 + a_col + 3 < ${K}) {
      const float4 v = *reinterpret_cast<const float4*>(
          (const float*)${A} + (int64_t)gm * ${a_sm} + k0 + a_col);
      ra[0] = v.x; ra[1] = v.y; ra[2] = v.z; ra[3] = v.w;
    } else {
      #pragma unroll
      for (int c = 0; c < 4; c++) {
        const int gk = k0 + a_col + c;
        ra[c] = (gm < ${M} && gk < ${K}) ? ${load_a} : 0.0f;
      }
    }
    const int gk = k0 + b_row;
    if (${vec_b} && gk < ${K} && col0 + b_col + 3 < ${N}) {
      const float4 v = *reinterpret_cast<const float4*>(
          (const float*)${B} + (int64_t)gk * ${b_sk} + col0 + b_col);
      rb[0] = v.x; rb[1] = v.y; rb[2] = v.z; rb[3] = v.w;
    } else {
      #pragma unroll
      for (int c = 0; c < 4; c++) {
        const int gn = col0 + b_col + c;
        rb[c] = (gk < ${K} && gn < ${N}) ? ${load_b} : 0.0f;
      }
    }
  };
  auto stash = [&](int buf) {
    #pragma unroll
    for (int c = 0; c < 4; c++) As[buf][a_col + c][a_row] = ra[c];
    #pragma unroll
    for (int c = 0; c < 4; c++) Bs[buf][b_row][b_col + c] = rb[c];
  };

  fetch(0);
  stash(0);
  __syncthreads();
  int cur = 0;
  for (int k0 = 0; k0 < ${K}; k0 += 8) {
    const bool more = k0 + 8 < ${K};
    if (more) fetch(k0 + 8);  // overlaps the global loads with the math below
    #pragma unroll
    for (int kk = 0; kk < 8; kk++) {
      float a[8], b[8];
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 8]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 8 + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 8]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 8 + 4]);
      a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;
      a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
      b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;
      b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
      #pragma unroll
      for (int i = 0; i < 8; i++)
        #pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) {
      stash(cur ^ 1);
      __syncthreads();
      cur ^= 1;
    }
  }
  #pragma unroll
  for (int i = 0; i < 8; i++) {
    const int m = row0 + ty * 8 + i;
    if (m >= ${M}) continue;
    #pragma unroll
    for (int j = 0; j < 8; j++) {
      const int n = col0 + tx * 8 + j;
      if (n < ${N}) ${name}_epilogue(m, n, acc[i][j], ${args});
    }
  }
}
