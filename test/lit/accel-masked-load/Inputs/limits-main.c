// Driver of limits.ll: calls each kernel on loops, offsets and bounds at the
// limits of their types and prints a hash of the results per group of calls.
// Every call is defined behaviour (no nsw/nuw operation of a kernel wraps),
// so before and after the pass the output must be identical.

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void Kernel(float *y, const float *x, int64_t s, int64_t e, int64_t d,
                    int64_t lo, int64_t hi, int64_t base);
Kernel up_s, up_s_incl, up_u, up_u_incl, down_s, down_s_incl, down_u,
    down_u_incl, up_mixed, up_mixed_incl, down_mixed, down_mixed_incl;
void u8_full(float *y, const float *x, uint8_t m, uint8_t n);
void s8_full(float *y, const float *x, int8_t e, int8_t lo, int8_t hi);
void s8_down(float *y, const float *x, int8_t e, int8_t n);
void u8_index32(float *y, const float *x, uint8_t m, int32_t d, int32_t n);
void u64_any(float *y, const float *x, uint64_t m, uint64_t n);
void u8_from_one(float *y, const float *x, uint8_t n);

typedef __int128 i128;
static float X[512], Y[512];
static uint64_t Hash;

static void mix(uint64_t V) {
  Hash ^= V;
  Hash *= 0x100000001b3ull;
}

static void mixY(int N) {
  for (int K = 0; K < N; ++K) {
    uint32_t Bits;
    memcpy(&Bits, &Y[K], 4);
    mix(Bits * (uint64_t)(K + 1));
  }
  memset(Y, 0, sizeof Y);
}

static i128 clamp(i128 V, i128 Min, i128 Max) {
  return V < Min ? Min : V > Max ? Max : V;
}

static const int Counts[] = {1, 2, 5, 41};

// One kernel over starts, counts, offsets and bounds near the limits of
// signed (Unsigned = 0) or unsigned 64-bit values.
static void sweep(const char *Name, Kernel *F, int Down, int Unsigned) {
  const i128 Min = Unsigned ? 0 : -((i128)1 << 63);
  const i128 Max = Unsigned ? ((i128)1 << 64) - 1 : ((i128)1 << 63) - 1;
  const i128 Half = (i128)1 << 63;
  const i128 Starts[] = {Min, Min + 1, Min + 41, -41, -1, 0, 7, 40,
                         Half - 41, Half - 1, Half, Max - 41, Max - 1, Max};
  for (unsigned SI = 0; SI < sizeof Starts / sizeof *Starts; ++SI)
    for (unsigned CI = 0; CI < sizeof Counts / sizeof *Counts; ++CI) {
      i128 S = Starts[SI], C = Counts[CI];
      i128 E = Down ? S - C : S + C;
      int Again = 0;
      for (unsigned Prev = 0; Prev < SI; ++Prev)
        Again |= Starts[Prev] == S;
      if (Again || S < Min || S > Max || E < Min || E > Max)
        continue;
      i128 First = S, Last = Down ? E + 1 : E - 1;
      i128 Ds[] = {0, -3, 5, Min - First, Max - Last, Min - Last, Max - First,
                   Half - First, Half - 1 - Last, -Half, Half - 1};
      for (unsigned DI = 0; DI < sizeof Ds / sizeof *Ds; ++DI) {
        i128 D = Ds[DI];
        int Seen = 0;
        for (unsigned Prev = 0; Prev < DI; ++Prev)
          Seen |= Ds[Prev] == D;
        if (Seen || D < -Half || D >= ((i128)1 << 64) || (!Unsigned && D >= Half))
          continue;
        // Unsigned kernels add D as an unsigned value.
        i128 DU = Unsigned && D < 0 ? D + ((i128)1 << 64) : D;
        i128 J0 = First + DU, J1 = Last + DU;
        if (J0 < Min || J0 > Max || J1 < Min || J1 > Max)
          continue;
        i128 JLo = J0 < J1 ? J0 : J1, JHi = J0 < J1 ? J1 : J0;
        // Bounds of the loop's type (a mixed kernel compares them as
        // unsigned values: negative ones are above every index).
        i128 BMin = Min, BMax = Max;
        i128 Bs[] = {BMin,    BMax,     JLo - 1, JLo,      JLo + 1,
                     JLo + 2, JHi - 1,  JHi,     JHi + 1,  JLo - 100,
                     Half - 1, Half,    BMin + 1, BMax - 1, 0};
        Hash = 0xcbf29ce484222325ull;
        for (unsigned L = 0; L < sizeof Bs / sizeof *Bs; ++L)
          for (unsigned H = 0; H < sizeof Bs / sizeof *Bs; ++H) {
            uint64_t Lo = (uint64_t)clamp(Bs[L], BMin, BMax);
            uint64_t Hi = (uint64_t)clamp(Bs[H], BMin, BMax);
            // x[j - base] for j in [JLo, JHi]: x[4 .. 44].
            uint64_t Base = (uint64_t)JLo - 4;
            F(Y, X, (int64_t)S, (int64_t)E, (int64_t)D, (int64_t)Lo,
              (int64_t)Hi, (int64_t)Base);
            mixY(41);
          }
        printf("%s s=%llx c=%d d=%llx hash=%016llx\n", Name,
               (unsigned long long)S, (int)C, (unsigned long long)D,
               (unsigned long long)Hash);
      }
    }
}

int main(void) {
  for (int K = 0; K < 512; ++K)
    X[K] = 0.37f * K + 1.0f;
  sweep("up_s", up_s, 0, 0);
  sweep("up_s_incl", up_s_incl, 0, 0);
  sweep("up_u", up_u, 0, 1);
  sweep("up_u_incl", up_u_incl, 0, 1);
  sweep("down_s", down_s, 1, 0);
  sweep("down_s_incl", down_s_incl, 1, 0);
  sweep("down_u", down_u, 1, 1);
  sweep("down_u_incl", down_u_incl, 1, 1);
  sweep("up_mixed", up_mixed, 0, 0);
  sweep("up_mixed_incl", up_mixed_incl, 0, 0);
  sweep("down_mixed", down_mixed, 1, 0);
  sweep("down_mixed_incl", down_mixed_incl, 1, 0);

  // 8-bit loops of every trip count 1 .. 256 (m = 0: 256 iterations, more
  // than an i8 holds).
  const int Ns[] = {0, 1, 2, 100, 127, 128, 129, 254, 255};
  for (unsigned NI = 0; NI < sizeof Ns / sizeof *Ns; ++NI) {
    Hash = 0xcbf29ce484222325ull;
    for (int M = 0; M < 256; ++M) {
      u8_full(Y, X, (uint8_t)M, (uint8_t)Ns[NI]);
      mixY(256);
    }
    printf("u8_full n=%d hash=%016llx\n", Ns[NI], (unsigned long long)Hash);
  }
  const int Bs[] = {-128, -127, -1, 0, 1, 100, 126, 127};
  for (unsigned L = 0; L < 8; ++L) {
    Hash = 0xcbf29ce484222325ull;
    for (unsigned H = 0; H < 8; ++H)
      for (int E = -128; E < 128; ++E) {
        s8_full(Y, X, (int8_t)E, (int8_t)Bs[L], (int8_t)Bs[H]);
        mixY(256);
      }
    printf("s8_full lo=%d hash=%016llx\n", Bs[L], (unsigned long long)Hash);
  }
  for (unsigned NI = 0; NI < 8; ++NI) {
    Hash = 0xcbf29ce484222325ull;
    for (int E = -128; E < 128; ++E) {
      s8_down(Y, X, (int8_t)E, (int8_t)Bs[NI]);
      mixY(256);
    }
    printf("s8_down n=%d hash=%016llx\n", Bs[NI], (unsigned long long)Hash);
  }
  const int32_t Offsets[] = {-300, -255, -10, 0, 3, 200};
  const int32_t Bounds[] = {0, 1, 50, 255, 256, 300, INT32_MAX, INT32_MIN, -1};
  for (unsigned DI = 0; DI < 6; ++DI) {
    Hash = 0xcbf29ce484222325ull;
    for (unsigned NI = 0; NI < 9; ++NI)
      for (int M = 0; M < 256; ++M) {
        // x[j] for 0 <= j < n, j <= 455: x holds 512.
        u8_index32(Y, X, (uint8_t)M, Offsets[DI], Bounds[NI]);
        mixY(256);
      }
    printf("u8_index32 d=%d hash=%016llx\n", Offsets[DI],
           (unsigned long long)Hash);
  }
  Hash = 0xcbf29ce484222325ull;
  for (int N = 0; N < 256; ++N) {
    u8_from_one(Y, X, (uint8_t)N);
    mixY(256);
  }
  printf("u8_from_one hash=%016llx\n", (unsigned long long)Hash);
  const uint64_t Ms[] = {1, 2, 40, 255};
  const uint64_t Ns64[] = {0, 1, 39, 40, 41, UINT64_MAX, 1ull << 63};
  for (unsigned MI = 0; MI < 4; ++MI) {
    Hash = 0xcbf29ce484222325ull;
    for (unsigned NI = 0; NI < 7; ++NI) {
      u64_any(Y, X, Ms[MI], Ns64[NI]);
      mixY(256);
    }
    printf("u64_any m=%llu hash=%016llx\n", (unsigned long long)Ms[MI],
           (unsigned long long)Hash);
  }
  return 0;
}
