// What the CPU offers the fused kernels' vector paths, asked once per
// process. The kernels are built for the baseline x86-64; their AVX2 loops
// are `target` functions taken only when these say so.
#ifndef TALLY_OPS_FUSED_CPU_FEATURES_H_
#define TALLY_OPS_FUSED_CPU_FEATURES_H_

namespace tally::ops::fused {

// HasAvx2 reports AVX2 together with the scalar extensions the AVX2 loops
// use beside it: POPCNT (mask counts) and BMI1 (trailing-zero scans).
inline bool HasAvx2() {
  static const bool has =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi");
  return has;
}

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_CPU_FEATURES_H_
