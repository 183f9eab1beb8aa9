export * from './validate';
export * from './document.service';
export * from './stage-publisher';
export * from './loader.stage';
export * from './chunker.stage';
export * from './embedder.stage';
export * from './indexer.stage';
export * from './status.projector';
