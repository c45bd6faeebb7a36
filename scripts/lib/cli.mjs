// Shared by the benchmark scripts (side_by_side.mjs, web_bench.mjs, compare_speed.mjs):
// their command lines and their medians.
import {parseArgs} from "node:util";

// Parses process.argv for `name` with node:util parseArgs `options` (a --help / -h flag
// is added): prints `usage` and exits 0 on --help, exits 2 with the error and `usage` on
// an unknown option or a missing value. Returns the values.
export function parseCli(name, usage, options) {
  let values;
  try {
    ({values} = parseArgs({options: {...options, help: {type: "boolean", short: "h", default: false}}}));
  } catch (e) {
    console.error(`${name}: ${e.message}\n${usage}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  return values;
}

// The option's value (a string) as a positive integer; exits 2 naming the option otherwise.
export function positiveInt(name, usage, option, text) {
  const v = Number(text);
  if (!Number.isInteger(v) || v < 1) {
    console.error(`${name}: ${option} needs a positive integer, got ${JSON.stringify(text)}\n${usage}`);
    process.exit(2);
  }
  return v;
}

// A comma-separated list of positive integers (e.g. --threads 1,2).
export function positiveIntList(name, usage, option, text) {
  return text.split(",").map((part) => positiveInt(name, usage, option, part));
}

// The median; for an even count, the mean of the two middle values.
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}
