// jemalloc's options for the `drover` binary, read by jemalloc at its first allocation
// (MALLOC_CONF in the environment still overrides them).
//
// - narenas:2: the agent's work is on its control loop; a few pool threads allocate
//   little. Fewer arenas keep fewer partly used pages.
// - dirty_decay_ms:0, muzzy_decay_ms:0: pages freed go back to the kernel at once, not
//   after jemalloc's default ten seconds (which, without a background thread, an idle
//   agent may never reach), and without the lazy MADV_FREE stage, whose pages still
//   count in RSS until the kernel needs them. In the density bench this kept the
//   agent's RSS after 5 s idle at its after-burst figure (109 MiB) instead of 126-130,
//   for no burst CPU that the bench could tell apart.
// - tcache_max:256, lg_tcache_nslots_mul:-1: each thread caches freed objects of up to
//   256 bytes only (default 32 KiB), and half as many of each size as by default. The
//   control loop's cache of larger ones filled over the churn bench's first 1,000
//   cycles and stayed (tcache_max:1024 was set for that), and what it caches keeps
//   partly used pages alive: in the density bench (1,000 tasks) the agent's RSS after
//   the burst was 68.2 MiB with tcache_max:1024 and 66.3 with these (interleaved runs),
//   for ~8 % more agent CPU in the burst (1.27 against 1.37 CPU-s) and no
//   change in its start rate. Without thread caches at all, the burst costs 60-90 %
//   more CPU.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's.
extern const char* malloc_conf;
const char* malloc_conf =
    "narenas:2,dirty_decay_ms:0,muzzy_decay_ms:0,tcache_max:256,lg_tcache_nslots_mul:-1";
}
