export * from './local-llm.adapter';
export * from './model-file';
