#!/usr/bin/env bash
# fake-fpga.sh: an example external device plugin for Drover, in plain bash (no jq).
# It speaks the line-delimited JSON protocol of docs/device-plugin-protocol.md on
# stdin/stdout and reports `count` fake FPGAs ("acme/fpga/Fake FPGA", ids fpga-0 ...).
#
# Agent configuration:
#   plugin "fpga" {
#     command = "/usr/local/bin/fake-fpga.sh"
#     config {
#       count = 2
#     }
#   }
#
# Real plugins should use a JSON library; the regular expressions below only cope with
# the compact JSON the agent sends.
set -u

count=1

# reply ID RESULT_JSON
reply() { printf '{"id":%s,"result":%s}\n' "$1" "$2"; }
# fail ID MESSAGE CODE
fail() { printf '{"id":%s,"error":"%s","code":"%s"}\n' "$1" "$2" "$3"; }

devices_json() {
  local instances="" i
  for ((i = 0; i < count; i++)); do
    [[ -n "$instances" ]] && instances+=","
    instances+="{\"id\":\"fpga-$i\",\"healthy\":true,\"pci_bus_id\":\"0000:0$i:00.0\"}"
  done
  printf '{"devices":[{"vendor":"acme","type":"fpga","name":"Fake FPGA",'
  printf '"attributes":{"memory":"8 GiB","lut_count":1200000,"clock":{"value":300,"unit":"MHz"}},'
  printf '"instances":[%s]}]}' "$instances"
}

stats_json() {
  local instances="" i
  for ((i = 0; i < count; i++)); do
    [[ -n "$instances" ]] && instances+=","
    # A made-up temperature between 40 and 59 C; utilization as a fraction of 100.
    instances+="\"fpga-$i\":{\"summary\":{\"value\":$((RANDOM % 100)),\"denominator\":100,"
    instances+="\"unit\":\"%\",\"desc\":\"Utilization\"},"
    instances+="\"stats\":{\"attributes\":{\"temperature\":{\"value\":$((40 + RANDOM % 20)),\"unit\":\"C\"}}}}"
  done
  printf '{"groups":[{"vendor":"acme","type":"fpga","name":"Fake FPGA","instances":{%s}}]}' \
    "$instances"
}

while IFS= read -r line; do
  [[ "$line" =~ \"id\":([0-9]+) ]] || { echo "fake-fpga: no id in: $line" >&2; continue; }
  id="${BASH_REMATCH[1]}"
  [[ "$line" =~ \"method\":\"([a-z]+)\" ]] && method="${BASH_REMATCH[1]}" || method=""
  echo "fake-fpga: $method (request $id)" >&2
  case "$method" in
    configure)
      [[ "$line" =~ \"count\":([0-9]+) ]] && count="${BASH_REMATCH[1]}"
      reply "$id" '{"protocol_version":1}'
      ;;
    fingerprint)
      reply "$id" "$(devices_json)"
      ;;
    reserve)
      ids=$(grep -o '"fpga-[0-9]*"' <<<"${line#*\"ids\":}" | tr -d '"' | paste -sd, -)
      bad=""
      for dev in ${ids//,/ }; do
        (( ${dev#fpga-} < count )) || bad="$dev"
      done
      if [[ -z "$ids" || -n "$bad" ]]; then
        fail "$id" "unknown device ${bad:-in request}" NOT_FOUND
        continue
      fi
      reply "$id" "{\"envs\":{\"FPGA_VISIBLE_DEVICES\":\"$ids\"},\"mounts\":[],\"devices\":[]}"
      ;;
    stats)
      reply "$id" "$(stats_json)"
      ;;
    *)
      fail "$id" "unknown method '$method'" UNIMPLEMENTED
      ;;
  esac
done
