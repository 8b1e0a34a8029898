// The float32 convolution reading its input in place, for CUDA (see
// fx.lowering.kernels.cuda.conv_in_place): CUDA C, with string.Template placeholders: ${name},
// ${sig} and ${args} (the parameters declared and passed), ${epilogue} (the group's epilogue at
// row i0, column i1 of the product given the float32 sum acc), ${A} (the padded input x) and
// ${B} (the kernel w), ${M} ${N} ${K} (the product C[m, n] = sum_k A[m, k] B[k, n]), ${TM}
// and ${TN} (a block's tile of C: TM and TN in 32, 64, 128), ${AKF} (1: a block's
// threads load A with k fastest, where consecutive k are neighbours in x; 0: m fastest), and
// the bodies ${row} (row u's offset in x), ${col} (column n's offset in w) and ${kofs} (index
// k's offsets *kx in x and *kw in w), each a sum of digits of its index times strides.
//
// Thread t of the block owns rows ty*RM..ty*RM+RM-1 and columns tx*RN..tx*RN+RN-1 of the tile
// (tx = t % 16, ty = t / 16; RM = TM/16, RN = TN/16). Each step of TK = 8 k's, the block's
// threads load the TM x TK slice of A (each row at its offset in x, each k at its own) and the
// TK x TN slice of B into registers, while the previous slice, staged k-major in shared
// memory (two buffers), is consumed. Rows past M, columns past N and k past K load zeros.

static __device__ __forceinline__ void ${name}_epilogue(int64_t i0, int64_t i1, float acc, ${sig}) {
${epilogue}
}
static __device__ __forceinline__ long long ${name}_row(long long u) {
  long long off = 0, i = 0;
${row}
  (void)i;
  return off;
}
static __device__ __forceinline__ long long ${name}_col(long long n) {
  long long off = 0, i = 0;
${col}
  (void)i;
  return off;
}
static __device__ __forceinline__ void ${name}_k(long long k, long long* kx, long long* kw) {
  long long x = 0, w = 0, i = 0;
${kofs}
  (void)i;
  *kx = x;
  *kw = w;
}
/* r[0..R) = s[0..R), s 16-byte aligned where R is a multiple of 4, else 8-byte aligned. */
template <int R>
static __device__ __forceinline__ void ${name}_row_of(float (&r)[R], const float* s) {
  #pragma unroll
  for (int i = 0; i < R; i += R % 4 ? 2 : 4) {
    if (R % 4 == 0) {
      const float4 v = *reinterpret_cast<const float4*>(s + i);
      r[i] = v.x; r[(i + 1) % R] = v.y; r[(i + 2) % R] = v.z; r[(i + 3) % R] = v.w;
    } else {
      const float2 v = *reinterpret_cast<const float2*>(s + i);
      r[i] = v.x; r[(i + 1) % R] = v.y;
    }
  }
}
extern "C" __global__ void __launch_bounds__(256) ${name}(${sig}) {
  constexpr long long M = ${M}, N = ${N}, K = ${K};
  constexpr int TM = ${TM}, TN = ${TN}, TK = 8, RM = TM / 16, RN = TN / 16;
  constexpr int LA = TM * TK / 256, LB = TN * TK / 256;  // loads per thread per step
  constexpr long long MT = (M + TM - 1) / TM;
  // (rows of TM + 4 and TN + 4 floats: 16-byte multiples, so each thread's RM or RN
  // neighbours load as float4 or float2)
  __align__(16) __shared__ float As[2][TK][TM + 4];
  __align__(16) __shared__ float Bs[2][TK][TN + 4];
  __shared__ long long rowx[TM];  // each row's offset in x (-1: past M)
  __shared__ long long colw[TN];  // each column's offset in w (-1: past N)
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const long long row0 = (long long)(blockIdx.x % MT) * TM;
  const long long col0 = (long long)(blockIdx.x / MT) * TN;
  for (int t = tid; t < TM; t += 256) rowx[t] = row0 + t < M ? ${name}_row(row0 + t) : -1;
  for (int t = tid; t < TN; t += 256) colw[t] = col0 + t < N ? ${name}_col(col0 + t) : -1;
  __syncthreads();
  const float* x = (const float*)${A};
  const float* w = (const float*)${B};
  float acc[RM][RN];
  #pragma unroll
  for (int i = 0; i < RM; i++)
    #pragma unroll
    for (int j = 0; j < RN; j++) acc[i][j] = 0.0f;
  float ra[LA], rb[LB];

  auto fetch = [&](long long k0) {
    #pragma unroll
    for (int j = 0; j < LA; j++) {
      const int e = tid + j * 256;
      const int mm = ${AKF} ? e / TK : e % TM, kk = ${AKF} ? e % TK : e / TM;
      const long long k = k0 + kk;
      long long kx, kw;
      ${name}_k(k, &kx, &kw);
      ra[j] = (rowx[mm] >= 0 && k < K) ? x[rowx[mm] + kx] : 0.0f;
    }
    #pragma unroll
    for (int j = 0; j < LB; j++) {
      const int e = tid + j * 256;
      const int nn = e % TN, kk = e / TN;
      const long long k = k0 + kk;
      long long kx, kw;
      ${name}_k(k, &kx, &kw);
      rb[j] = (colw[nn] >= 0 && k < K) ? w[kw + colw[nn]] : 0.0f;
    }
  };
  auto stash = [&](int buf) {
    #pragma unroll
    for (int j = 0; j < LA; j++) {
      const int e = tid + j * 256;
      As[buf][${AKF} ? e % TK : e / TM][${AKF} ? e / TK : e % TM] = ra[j];
    }
    #pragma unroll
    for (int j = 0; j < LB; j++) {
      const int e = tid + j * 256;
      Bs[buf][e / TN][e % TN] = rb[j];
    }
  };

  fetch(0);
  stash(0);
  __syncthreads();
  int cur = 0;
  for (long long k0 = 0; k0 < K; k0 += TK) {
    const bool more = k0 + TK < K;
    if (more) fetch(k0 + TK);  // overlaps the global loads with the math below
    #pragma unroll
    for (int kk = 0; kk < TK; kk++) {
      float a[RM], b[RN];
      ${name}_row_of(a, &As[cur][kk][ty * RM]);
      ${name}_row_of(b, &Bs[cur][kk][tx * RN]);
      #pragma unroll
      for (int i = 0; i < RM; i++)
        #pragma unroll
        for (int j = 0; j < RN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) {
      // The other buffer was last read before the previous step's barrier.
      stash(cur ^ 1);
      __syncthreads();
      cur ^= 1;
    }
  }
  #pragma unroll
  for (int i = 0; i < RM; i++) {
    const long long m = row0 + ty * RM + i;
    if (m >= M) continue;
    #pragma unroll
    for (int j = 0; j < RN; j++) {
      const long long n = col0 + tx * RN + j;
      if (n < N) ${name}_epilogue(m, n, acc[i][j], ${args});
    }
  }
}
