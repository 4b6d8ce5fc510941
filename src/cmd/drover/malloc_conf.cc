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
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's.
extern const char* malloc_conf;
const char* malloc_conf = "narenas:2,dirty_decay_ms:0,muzzy_decay_ms:0";
}
