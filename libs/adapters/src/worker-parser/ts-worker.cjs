'use strict';
/* eslint-disable @typescript-eslint/no-require-imports */
/*
 * Source mode only. Under vitest the adapter runs from TypeScript sources, which a worker thread cannot load; this entry
 * transpiles each required .ts file with the TypeScript compiler (pure JavaScript) using tsconfig.base.json's options and
 * `@rag/*` paths, then loads the worker module named in workerData.tsEntry. The build emits parse.worker.js, which the
 * adapter uses instead (this file is never loaded from dist/).
 * Not @swc/core, although the build uses it: a native addon loaded in a worker thread segfaults the process when a later
 * worker loads it again (measured: the second pool's first parse crashed with SIGSEGV).
 */
const { existsSync, readFileSync } = require('node:fs');
const Module = require('node:module');
const { dirname, join } = require('node:path');
const { workerData } = require('node:worker_threads');
const ts = require('typescript');

let root = __dirname;
while (!existsSync(join(root, 'tsconfig.base.json'))) {
  const up = dirname(root);
  if (up === root) throw new Error(`no tsconfig.base.json above ${__dirname}`);
  root = up;
}
const base = JSON.parse(readFileSync(join(root, 'tsconfig.base.json'), 'utf8')).compilerOptions;
const aliases = new Map(Object.entries(base.paths ?? {}).map(([name, [target]]) => [name, join(root, base.baseUrl ?? '.', target)]));
const compilerOptions = {
  module: ts.ModuleKind.CommonJS,
  target: ts.ScriptTarget.ES2022,
  esModuleInterop: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  inlineSourceMap: true,
};

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return resolve.call(this, aliases.get(request) ?? request, ...rest);
};
require.extensions['.ts'] = (module, filename) => {
  const { outputText } = ts.transpileModule(readFileSync(filename, 'utf8'), { compilerOptions, fileName: filename });
  module._compile(outputText, filename);
};

module.exports = require(workerData.tsEntry);
