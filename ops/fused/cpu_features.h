// What the CPU offers the fused kernels' vector paths, asked once per
// process. The kernels are built for the baseline x86-64; their AVX2 loops
// are `target` functions taken only when these say so.
#ifndef TALLY_OPS_FUSED_CPU_FEATURES_H_
#define TALLY_OPS_FUSED_CPU_FEATURES_H_

#include <cpuid.h>

namespace tally::ops::fused {

// HasAvx2 reports AVX2 together with the scalar extensions the AVX2 loops
// use beside it: POPCNT (mask counts) and BMI1 (trailing-zero scans).
inline bool HasAvx2() {
  static const bool has =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi");
  return has;
}

// HasAvx2F16cFma is HasAvx2 with F16C (half-to-float conversion) and FMA,
// read from CPUID leaf 1 (clang's __builtin_cpu_supports knows no "f16c").
inline bool HasAvx2F16cFma() {
  static const bool has = [] {
    unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    return HasAvx2() && (ecx & bit_F16C) != 0 && (ecx & bit_FMA) != 0;
  }();
  return has;
}

// HasAvx512 is HasAvx2F16cFma with AVX-512F (sixteen-lane conversions and
// eight-lane gathers).
inline bool HasAvx512() {
  static const bool has = HasAvx2F16cFma() && __builtin_cpu_supports("avx512f");
  return has;
}

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_CPU_FEATURES_H_
