// Generates ggml_vectors.inc from ggml's own reference quantizers/dequantizers. Not built by
// CMake (it links ggml, which ugrad does not); run by hand when the fixtures change:
//   git clone https://github.com/ggml-org/ggml && cd ggml && git checkout d99724f
//   gcc -O2 -std=gnu11 -c src/ggml-quants.c -Iinclude -Isrc -o quants.o
//   gcc -O2 -std=gnu11 -Iinclude -Isrc gen_ggml_vectors.c quants.o -lm -o gen
//   ./gen > ggml_vectors.inc
// No -march: without FMA the compiler cannot contract ggml's float expressions.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#define GGML_COMMON_DECL_C
#include "ggml-common.h"
#include "ggml-quants.h"


// Symbols ggml-quants.c references but the reference functions used here never call.
#include <stdlib.h>
void ggml_abort(const char* f, int l, const char* fmt, ...) { fprintf(stderr, "abort %s:%d %s\n", f, l, fmt); abort(); }
size_t ggml_row_size(enum ggml_type t, int64_t n) { (void)t; (void)n; return 0; }
const char* ggml_type_name(enum ggml_type t) { (void)t; return "?"; }
size_t ggml_type_size(enum ggml_type t) { (void)t; return 0; }

#define N 2560
static float in[N];
static uint64_t s;
static uint64_t next(void) { uint64_t z = (s += 0x9E3779B97F4A7C15ull); z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; return z ^ (z >> 31); }
static double unif(void) { return (next() >> 11) * (1.0 / 9007199254740992.0); }
static double gauss(void) { double u = unif(), v = unif(); if (u < 1e-300) u = 1e-300; return sqrt(-2 * log(u)) * cos(6.283185307179586 * v); }
static uint64_t fnv(const void* p, size_t n) { const uint8_t* b = p; uint64_t h = 0xcbf29ce484222325ull; for (size_t i = 0; i < n; ++i) { h ^= b[i]; h *= 0x100000001b3ull; } return h; }

static void make_input(void) {
  s = 12345;
  for (int b = 0; b < 10; ++b) {
    float* x = in + 256 * b;
    for (int i = 0; i < 256; ++i) {
      float v;
      switch (b) {
        case 0: case 1: v = (float)gauss(); break;
        case 2: v = (float)(0.02 * (2 * unif() - 1)); break;
        case 3: v = (float)gauss() * (i % 37 == 5 ? 10.0f : 1.0f); break;
        case 4: v = (float)(0.5 + unif()); break;
        case 5: v = i < 32 ? 0.0f : i < 64 ? 0.25f : i < 96 ? (float)(1e-6 * gauss()) : (float)(1000 * gauss()); break;
        case 6: v = 0.0f; break;
        case 7: v = -1.5f; break;
        case 8: v = roundf((float)gauss() * 4) / 4; break;
        default: v = (i % 41 == 3) ? (float)(5 * gauss()) : 0.0f; break;
      }
      x[i] = v;
    }
  }
}

static size_t ggml_blck(const char* t) { return strstr(t, "_K") || !strcmp(t, "IQ4_XS") ? 256 : 32; }

static void emit_bytes(const char* name, const char* type, const void* p, size_t n) {
  const uint8_t* b = p;
  printf("    {GgmlType::%s, \"%s\",\n     \"", type, name);
  for (size_t i = 0; i < n; ++i) { printf("%02x", b[i]); if (i % 48 == 47 && i + 1 < n) printf("\"\n     \""); }
  printf("\"},\n");
}

static uint8_t qbuf[N * 2];
static float deq[N];

// The bulk input (NB super-blocks), integer-derived so C++ rebuilds it bit for bit: per block a
// power-of-two scale and a shape; per element u1, u2 uniform in [-1, 1) from one splitmix64.
#define NB 256
static float bulk[NB * 256];
static uint8_t bulkq[NB * 256 * 2];
static float bulkd[NB * 256];
static void make_bulk(void) {
  s = 777;
  for (int b = 0; b < NB; ++b) {
    const uint64_t r = next();
    const float scale = ldexpf(1.0f, (int)(r % 17) - 8);
    const int kind = (int)((r >> 8) % 4);
    for (int i = 0; i < 256; ++i) {
      const uint64_t e = next();
      const float u1 = (float)((int32_t)(uint32_t)e >> 8) * 0x1p-23f;
      const float u2 = (float)((int32_t)(uint32_t)(e >> 32) >> 8) * 0x1p-23f;
      float v;
      if (kind == 0) v = (u1 + u2) * scale;
      else if (kind == 1) v = u1 * scale;
      else if (kind == 2) v = u1 * u1 * u1 * scale;
      else v = (u1 > 0.9f ? u2 * 8.0f : u2 * 0.1f) * scale;
      bulk[b * 256 + i] = v;
    }
  }
}

int main(void) {
  make_input();
  printf("// Generated from ggml d99724f (ggml-quants.c, compiled with gcc -O2, no -march): the\n");
  printf("// quantizer outputs for kGgmlInput, and FNV-1a hashes of ggml's dequantized floats for\n");
  printf("// splitmix64 block bytes (see test_quant_ggml_vectors.cpp). Do not edit by hand.\n");
  printf("// NOLINTBEGIN\n");
  printf("inline constexpr uint32_t kGgmlInput[%d] = {\n", N);
  for (int i = 0; i < N; ++i) { uint32_t u; memcpy(&u, &in[i], 4); printf("%s0x%08x,", i % 8 == 0 ? "    " : " ", u); if (i % 8 == 7) printf("\n"); }
  printf("};\n\nstruct GgmlQuantVector {\n  GgmlType type;\n  const char* name;\n  const char* hex;\n};\n\n");
  printf("inline const GgmlQuantVector kGgmlQuantVectors[] = {\n");
  quantize_row_q8_0_ref(in, (block_q8_0*)qbuf, N); emit_bytes("quantize_row_q8_0_ref", "Q8_0", qbuf, N / 32 * sizeof(block_q8_0));
  quantize_row_q4_0_ref(in, (block_q4_0*)qbuf, N); emit_bytes("quantize_row_q4_0_ref", "Q4_0", qbuf, N / 32 * sizeof(block_q4_0));
  quantize_row_q4_1_ref(in, (block_q4_1*)qbuf, N); emit_bytes("quantize_row_q4_1_ref", "Q4_1", qbuf, N / 32 * sizeof(block_q4_1));
  quantize_row_q5_0_ref(in, (block_q5_0*)qbuf, N); emit_bytes("quantize_row_q5_0_ref", "Q5_0", qbuf, N / 32 * sizeof(block_q5_0));
  quantize_row_q5_1_ref(in, (block_q5_1*)qbuf, N); emit_bytes("quantize_row_q5_1_ref", "Q5_1", qbuf, N / 32 * sizeof(block_q5_1));
  quantize_row_q2_K_ref(in, (block_q2_K*)qbuf, N); emit_bytes("quantize_row_q2_K_ref", "Q2_K", qbuf, N / 256 * sizeof(block_q2_K));
  quantize_row_q3_K_ref(in, (block_q3_K*)qbuf, N); emit_bytes("quantize_row_q3_K_ref", "Q3_K", qbuf, N / 256 * sizeof(block_q3_K));
  quantize_row_q4_K_ref(in, (block_q4_K*)qbuf, N); emit_bytes("quantize_row_q4_K_ref", "Q4_K", qbuf, N / 256 * sizeof(block_q4_K));
  quantize_row_q5_K_ref(in, (block_q5_K*)qbuf, N); emit_bytes("quantize_row_q5_K_ref", "Q5_K", qbuf, N / 256 * sizeof(block_q5_K));
  quantize_row_q6_K_ref(in, (block_q6_K*)qbuf, N); emit_bytes("quantize_row_q6_K_ref", "Q6_K", qbuf, N / 256 * sizeof(block_q6_K));
  memset(qbuf, 0, sizeof qbuf);  // ggml leaves bsums of an all-zero block unwritten
  quantize_row_q8_K_ref(in, (block_q8_K*)qbuf, N); emit_bytes("quantize_row_q8_K_ref", "Q8_K", qbuf, N / 256 * sizeof(block_q8_K));
  quantize_iq4_nl(in, qbuf, 1, N, NULL); emit_bytes("quantize_iq4_nl (ntry 7)", "IQ4_NL", qbuf, N / 32 * sizeof(block_iq4_nl));
  quantize_iq4_xs(in, qbuf, 1, N, NULL); emit_bytes("quantize_iq4_xs (ntry 7)", "IQ4_XS", qbuf, N / 256 * sizeof(block_iq4_xs));
  quantize_row_mxfp4_ref(in, (block_mxfp4*)qbuf, N); emit_bytes("quantize_row_mxfp4_ref", "MXFP4", qbuf, N / 32 * sizeof(block_mxfp4));
  printf("};\n\n");

  // Dequantization: 8 blocks of splitmix64 bytes per type, fp16 fields masked finite (byte & 0xbb).
  printf("struct GgmlDequantVector {\n  GgmlType type;\n  uint64_t seed;\n  uint64_t fnv1a_of_floats;\n};\n\n");
  printf("inline constexpr GgmlDequantVector kGgmlDequantVectors[] = {\n");
#define D(T, blk, nel, seed_, fn, ...) do { \
    const int nb = 8; const int offs[] = {__VA_ARGS__}; s = seed_; \
    for (size_t i = 0; i < nb * sizeof(blk); i += 8) { uint64_t r = next(); memcpy(qbuf + i, &r, (nb * sizeof(blk) - i) < 8 ? (nb * sizeof(blk) - i) : 8); } \
    for (int b = 0; b < nb; ++b) for (size_t k = 0; k < sizeof offs / sizeof offs[0]; ++k) if (offs[k] >= 0) qbuf[b * sizeof(blk) + offs[k] + 1] &= 0xbb; \
    fn((const blk*)qbuf, deq, nb * nel); \
    printf("    {GgmlType::%s, %lluu, 0x%016llxull},\n", #T, (unsigned long long)seed_, (unsigned long long)fnv(deq, nb * nel * 4)); } while (0)
  D(Q4_0, block_q4_0, 32, 1, dequantize_row_q4_0, 0);
  D(Q4_1, block_q4_1, 32, 2, dequantize_row_q4_1, 0, 2);
  D(Q5_0, block_q5_0, 32, 3, dequantize_row_q5_0, 0);
  D(Q5_1, block_q5_1, 32, 4, dequantize_row_q5_1, 0, 2);
  D(Q8_0, block_q8_0, 32, 5, dequantize_row_q8_0, 0);
  D(Q4_K, block_q4_K, 256, 6, dequantize_row_q4_K, 0, 2);
  D(Q5_K, block_q5_K, 256, 7, dequantize_row_q5_K, 0, 2);
  D(Q6_K, block_q6_K, 256, 8, dequantize_row_q6_K, 208);
  D(Q8_K, block_q8_K, 256, 9, dequantize_row_q8_K, 2);
  D(IQ4_NL, block_iq4_nl, 32, 10, dequantize_row_iq4_nl, 0);
  D(IQ4_XS, block_iq4_xs, 256, 11, dequantize_row_iq4_xs, 0);
  D(MXFP4, block_mxfp4, 32, 12, dequantize_row_mxfp4, -1);
  D(Q2_K, block_q2_K, 256, 13, dequantize_row_q2_K, 80, 82);
  D(Q3_K, block_q3_K, 256, 14, dequantize_row_q3_K, 108);
  printf("};\n\n");

  // Bulk: FNV-1a of the quantized bytes and of ggml's dequantization of them.
  make_bulk();
  printf("struct GgmlBulkVector {\n  GgmlType type;\n  uint64_t fnv1a_of_bytes;\n  uint64_t fnv1a_of_floats;\n};\n\n");
  printf("inline constexpr int kGgmlBulkBlocks = %d;  // super-blocks of 256\n", NB);
  printf("inline constexpr GgmlBulkVector kGgmlBulkVectors[] = {\n");
  const int n = NB * 256;
#define B(T, blk, quant, dequant) do { \
    memset(bulkq, 0, sizeof bulkq); quant; dequant((const blk*)bulkq, bulkd, n); \
    printf("    {GgmlType::%s, 0x%016llxull, 0x%016llxull},\n", #T, \
           (unsigned long long)fnv(bulkq, (size_t)n / ggml_blck(#T) * sizeof(blk)), \
           (unsigned long long)fnv(bulkd, (size_t)n * 4)); } while (0)
  B(Q8_0, block_q8_0, quantize_row_q8_0_ref(bulk, (block_q8_0*)bulkq, n), dequantize_row_q8_0);
  B(Q4_0, block_q4_0, quantize_row_q4_0_ref(bulk, (block_q4_0*)bulkq, n), dequantize_row_q4_0);
  B(Q4_1, block_q4_1, quantize_row_q4_1_ref(bulk, (block_q4_1*)bulkq, n), dequantize_row_q4_1);
  B(Q5_0, block_q5_0, quantize_row_q5_0_ref(bulk, (block_q5_0*)bulkq, n), dequantize_row_q5_0);
  B(Q5_1, block_q5_1, quantize_row_q5_1_ref(bulk, (block_q5_1*)bulkq, n), dequantize_row_q5_1);
  B(Q2_K, block_q2_K, quantize_row_q2_K_ref(bulk, (block_q2_K*)bulkq, n), dequantize_row_q2_K);
  B(Q3_K, block_q3_K, quantize_row_q3_K_ref(bulk, (block_q3_K*)bulkq, n), dequantize_row_q3_K);
  B(Q4_K, block_q4_K, quantize_row_q4_K_ref(bulk, (block_q4_K*)bulkq, n), dequantize_row_q4_K);
  B(Q5_K, block_q5_K, quantize_row_q5_K_ref(bulk, (block_q5_K*)bulkq, n), dequantize_row_q5_K);
  B(Q6_K, block_q6_K, quantize_row_q6_K_ref(bulk, (block_q6_K*)bulkq, n), dequantize_row_q6_K);
  B(Q8_K, block_q8_K, quantize_row_q8_K_ref(bulk, (block_q8_K*)bulkq, n), dequantize_row_q8_K);
  B(IQ4_NL, block_iq4_nl, quantize_iq4_nl(bulk, bulkq, 1, n, NULL), dequantize_row_iq4_nl);
  B(IQ4_XS, block_iq4_xs, quantize_iq4_xs(bulk, bulkq, 1, n, NULL), dequantize_row_iq4_xs);
  B(MXFP4, block_mxfp4, quantize_row_mxfp4_ref(bulk, (block_mxfp4*)bulkq, n), dequantize_row_mxfp4);
  printf("};\n// NOLINTEND\n");
  return 0;
}
