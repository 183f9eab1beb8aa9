#!/usr/bin/env node
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const entry = join(__dirname, '..', 'dist', 'apps', 'cli', 'src', 'main.js');
if (!existsSync(entry)) {
  console.error('rag: the build is missing; run `npm ci` (or `npm run build`) in ' + join(__dirname, '..'));
  process.exit(1);
}
require(entry);
