# Sourced by the scripts that build (set-up, tests, benchmarks): the vector
# extensions this machine's CPU has beyond llama.cpp's default AVX2, as
# ggml's own build options, which the llama.cpp crate passes on to CMake.
# With AVX-512 (and its VNNI dot products) prompts are processed about 1.5
# times as fast, and four answers decoded together 1.6 times, on the CPUs
# that have it. Every build on one machine must see the same options, or
# cargo builds llama.cpp again: so each script that builds sources this.
# AMX is left off: its kernels crashed under the hypervisor tried.
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
cpu_has() {
  local f
  for f in "$@"; do [[ $cpu_flags == *" $f "* ]] || return 1; done
}
if cpu_has avx512f avx512cd avx512vl avx512dq avx512bw; then
  export GGML_AVX512=ON
  if cpu_has avx512_vnni; then export GGML_AVX512_VNNI=ON; fi
  if cpu_has avx512_bf16; then export GGML_AVX512_BF16=ON; fi
  if cpu_has avx512vbmi; then export GGML_AVX512_VBMI=ON; fi
fi
if cpu_has avx_vnni; then export GGML_AVX_VNNI=ON; fi
