# Functions shared by the awk tables of scripts/bench.sh and scripts/bench_anchors.sh. The
# scripts pass this file's text ahead of their own program text (awk "$(cat lib)"'...').
#
# field(name): the value of `name=value` among this `bench ...` line's fields ($2..$NF), or "".
function field(name,   i, kv) {
  for (i = 2; i <= NF; ++i) {
    split($i, kv, "=")
    if (kv[1] == name) return substr($i, length(name) + 2)
  }
  return ""
}
# median(key): the median of sample[key, 1..count[key]] (numeric; the upper one of an even count).
function median(key,   n, i, j, v, tmp) {
  n = count[key]
  for (i = 1; i <= n; ++i) v[i] = sample[key, i] + 0
  for (i = 2; i <= n; ++i) {
    tmp = v[i]
    for (j = i - 1; j >= 1 && v[j] > tmp; --j) v[j + 1] = v[j]
    v[j + 1] = tmp
  }
  return v[int(n / 2) + 1]
}
# get(key, name): val[key, name] as a number, the figure `name` of the line keyed `key` that the
# table's own rule stored; a missing one is reported on stderr and sets `bad` (the table then
# exits 1 at its end).
function get(key, name) {
  if (!((key, name) in val)) {
    printf "bench: missing figure %s %s\n", key, name > "/dev/stderr"
    bad = 1
    return 0
  }
  return val[key, name] + 0
}
