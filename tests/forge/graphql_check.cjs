// GitHub's GraphQL requests checked against GitHub's published GraphQL schema
// (@octokit/graphql-schema): argv[2] = the npm prefix holding it; stdin = a JSON array of
// {query, variables}; stdout = a JSON array with, per request, its errors (strings; [] if valid).
"use strict";
const path = require("node:path");
const fs = require("node:fs");
const root = process.argv[2];
const modules = path.join(root, "node_modules");
const graphql = require(path.join(modules, "graphql"));
const { getVariableValues } = require(path.join(modules, "graphql", "execution", "values"));
const sdl = fs.readFileSync(path.join(modules, "@octokit", "graphql-schema", "schema.graphql"),
                            "utf8");
// assumeValidSDL: the published SDL defines two fields of EnterpriseOwnerInfo twice (15.26.1,
// with the same type), which graphql-js refuses by default.
const schema = graphql.buildSchema(sdl, { assumeValidSDL: true });
const requests = JSON.parse(fs.readFileSync(0, "utf8"));
const out = requests.map(({ query, variables }) => {
  let doc;
  try {
    doc = graphql.parse(String(query || ""));
  } catch (e) {
    return [`syntax: ${e.message}`];
  }
  const errors = graphql.validate(schema, doc).map(e => e.message);
  if (errors.length) return errors;
  const op = graphql.getOperationAST(doc);
  if (!op) return ["no single operation to run"];
  const coerced = getVariableValues(schema, op.variableDefinitions || [], variables || {});
  return (coerced.errors || []).map(e => e.message);
});
process.stdout.write(JSON.stringify(out));
