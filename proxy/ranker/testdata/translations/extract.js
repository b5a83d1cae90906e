// extract.js writes the parallel corpus that TestTranslations learns
// proxy/ranker/translations.tsv from: every tool and parameter
// description of @larksuiteoapi/lark-mcp (MIT), in English and in Chinese,
// as a JSON array of [english, chinese] pairs. A tool description
// ("[Feishu/Lark]-Calendar-Event-Create event-…") is split at its "-"
// into parts when both languages have as many, each part a pair.
//
// The tools of a recorded tools/list result named as the argument
// are left out, so that a ranker scored on that catalog has not learned
// from those tools' own descriptions: the table is built with
// ../servers/lark.json left out.
//
// Usage, with the package installed in the current directory
// (npm install --ignore-scripts @larksuiteoapi/lark-mcp@0.5.1 zod@3.25.76;
// the schemas are zod 3 objects):
//
//	node extract.js path/to/proxy/ranker/testdata/servers/lark.json > corpus.json
'use strict';
const tools = require(process.cwd() + '/node_modules/@larksuiteoapi/lark-mcp/dist/mcp-tool/tools/index.js');

const zh = new Map(tools.AllToolsZh.map((t) => [t.name, t]));
const skip = new Set();
if (process.argv[2]) {
  for (const t of JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8')).tools) {
    skip.add(t.name.replace(/_/g, '.'));
  }
}
const pairs = [];

function description(s) {
  return s && (s.description || (s._def && s._def.description));
}

function shape(s) {
  const d = s && s._def;
  if (!d || !d.shape) return undefined;
  return typeof d.shape === 'function' ? d.shape() : d.shape;
}

// walk pairs the descriptions of two zod schemas of the same structure.
function walk(en, cn, depth) {
  if (!en || !cn || depth > 8) return;
  const a = description(en), b = description(cn);
  if (a && b && a !== b) pairs.push([a, b]);
  const sa = shape(en), sb = shape(cn);
  if (sa && sb) for (const k of Object.keys(sa)) walk(sa[k], sb[k], depth + 1);
  for (const k of ['innerType', 'type', 'schema']) {
    const x = en._def && en._def[k], y = cn._def && cn._def[k];
    if (x && y && typeof x === 'object') walk(x, y, depth + 1);
  }
}

for (const t of tools.AllTools) {
  const c = zh.get(t.name);
  if (!c || skip.has(t.name.replace(/_/g, '.'))) continue;
  const a = t.description.split('-'), b = c.description.split('-');
  if (a.length === b.length) {
    a.forEach((s, i) => pairs.push([s.trim(), b[i].trim()]));
  } else {
    pairs.push([t.description, c.description]);
  }
  if (t.schema && c.schema) for (const k of Object.keys(t.schema)) walk(t.schema[k], c.schema[k], 0);
}
process.stdout.write(JSON.stringify(pairs) + '\n');
