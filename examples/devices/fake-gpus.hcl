# Agent configuration for a dev agent with four fake GPUs (docs/devices.md):
#   make run-gpus
# or, by hand from the repository root:
#   drover agent -dev -config examples/devices/fake-gpus.hcl
plugin "example" {
  config {
    # One file per GPU; relative paths are relative to the agent's working directory.
    dir = "examples/devices/gpus"
    # The variable a task finds its GPUs in, as with real NVIDIA GPUs.
    env_var            = "NVIDIA_VISIBLE_DEVICES"
    fingerprint_period = "1s"
  }
}
