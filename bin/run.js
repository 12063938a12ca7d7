#!/usr/bin/env node
import { execute, settings } from '@oclif/core';

// The shipped binary always runs the compiled dist/, whatever NODE_ENV says.
settings.enableAutoTranspile = false;

await execute({ dir: import.meta.url });
