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
// - tcache_max:1024: each thread caches freed objects of up to 1 KiB only (default
//   32 KiB). The control loop's cache of larger ones filled over the churn bench's
//   first 1,000 cycles and stayed: RSS rose 1.0-1.4 MiB (+3.9 to +5.8 %) after cycle
//   100, then held, with the live heap (jemalloc's profile) 0.1 MB larger. With this
//   limit: +0.3 to +1.4 % and ~1.4 MiB less throughout; the 1,000-task burst costs the
//   agent ~15 % more CPU (1.57 against 1.34 CPU-s, five interleaved runs). Without
//   thread caches at all the churn is flat too, but the burst costs 60-90 % more.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's.
extern const char* malloc_conf;
const char* malloc_conf = "narenas:2,dirty_decay_ms:0,muzzy_decay_ms:0,tcache_max:1024";
}
