/*
 * The speed a register-blocked, no-FMA AVX2 kernel reaches on this core:
 * the ceiling that microrl's forward kernel (README › Speed, "What bounds the
 * RL Zoo run on this core") is measured against.
 *
 * One block of running sums, RV vectors of 8 rows x SS samples, walks the 64
 * columns of a 64-column W held in L1: per column, RV loads of W, SS
 * broadcasts of the inputs, RV*SS multiplies and RV*SS additions (no fused
 * multiply-add, as microrl's kernels). Prints the FLOP done; divide by the
 * CPU seconds.
 *
 *   gcc -O3 -mavx2 -mno-fma -ffp-contract=off -DRV=4 -DSS=3 kernel_probe.c -o probe
 *   /usr/bin/time -f "%U" taskset -c 1 ./probe 6666666   # FLOP / user s = FLOP/s
 *
 * REPS = 80 000 000 / (RV * SS) gives 81.92 GFLOP for every shape.
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef RV
#define RV 2
#endif
#ifndef SS
#define SS 4
#endif

static float W[64][RV * 8] __attribute__((aligned(32)));
static float X[SS][64] __attribute__((aligned(32)));
static float Y[SS][RV * 8];

int main(int argc, char **argv) {
    long reps = argc > 1 ? atol(argv[1]) : 1000000;
    for (int j = 0; j < 64; j++) {
        for (int i = 0; i < RV * 8; i++) W[j][i] = (i + j) * 1e-3f;
        for (int s = 0; s < SS; s++) X[s][j] = (s - j) * 1e-3f;
    }
    for (long r = 0; r < reps; r++) {
        __m256 z[SS][RV];
        for (int s = 0; s < SS; s++)
            for (int v = 0; v < RV; v++) z[s][v] = _mm256_setzero_ps();
        for (int j = 0; j < 64; j++) {
            __m256 w[RV];
            for (int v = 0; v < RV; v++) w[v] = _mm256_load_ps(&W[j][8 * v]);
            for (int s = 0; s < SS; s++) {
                __m256 b = _mm256_broadcast_ss(&X[s][j]);
                for (int v = 0; v < RV; v++) z[s][v] = _mm256_add_ps(z[s][v], _mm256_mul_ps(w[v], b));
            }
        }
        for (int s = 0; s < SS; s++)
            for (int v = 0; v < RV; v++) _mm256_storeu_ps(&Y[s][8 * v], z[s][v]);
        __asm__ volatile("" ::"r"(Y) : "memory");
    }
    printf("%.6g FLOP\n", (double)reps * 64 * SS * RV * 8 * 2);
    return 0;
}
