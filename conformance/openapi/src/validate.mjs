// Validates replies (and request bodies) against the schemas an OpenAPI
// document declares for them, with ajv (JSON Schema 2020-12, the dialect
// of OpenAPI 3.1).
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** Returns the schema-checking functions of doc. */
export function contract(doc) {
  // Refs are local to the document: give it an id and point them there.
  const rewrite = (v) => {
    if (Array.isArray(v)) return v.map(rewrite);
    if (v && typeof v === "object") {
      const out = {};
      for (const [k, x] of Object.entries(v)) {
        if (k === "discriminator") continue; // ajv takes no mapping; oneOf decides alone
        out[k] = k === "$ref" && typeof x === "string" && x.startsWith("#/") ? "api" + x : rewrite(x);
      }
      return out;
    }
    return v;
  };
  const d = rewrite(doc);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  for (const f of ["int32", "uint32", "int64", "uint64"]) ajv.addFormat(f, true);
  ajv.addSchema({ $id: "api", components: d.components });
  const cache = new Map();
  const compile = (key, schema) => {
    if (!cache.has(key)) cache.set(key, ajv.compile(schema));
    return cache.get(key);
  };
  const resolve = (r) => (r?.$ref ? d.components.responses[r.$ref.split("/").pop()] : r);
  const errorsOf = (v) => ajv.errorsText(v.errors, { separator: "; " });
  return {
    /** Checks a reply; returns "" or what is wrong. */
    reply(method, path, status, body) {
      const op = d.paths[path]?.[method];
      if (!op) return `no operation ${method} ${path} in the document`;
      const resp = resolve(op.responses[String(status)] ?? op.responses.default);
      const schema = resp?.content?.["application/json"]?.schema;
      if (!schema) return `${method} ${path}: no JSON reply declared for ${status}`;
      const v = compile(`${method} ${path} ${status}`, schema);
      return v(body) ? "" : `${method} ${path} ${status}: ${errorsOf(v)}`;
    },
    /** Checks a request body; returns "" or what is wrong. */
    request(path, body) {
      const schema = d.paths[path]?.post?.requestBody?.content?.["application/json"]?.schema;
      if (!schema) return `no request body declared for ${path}`;
      const v = compile(`req ${path}`, schema);
      return v(body) ? "" : errorsOf(v);
    },
    /** A validator of a subschema of the document (its refs as in the document). */
    compile(sub) {
      return ajv.compile(rewrite(sub));
    },
    /** The request schema of path with its references resolved, for a generator. */
    requestSchema(path) {
      return doc.paths[path]?.post?.requestBody?.content?.["application/json"]?.schema;
    },
  };
}
