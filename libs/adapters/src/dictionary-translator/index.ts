export * from './dictionary-translator.adapter';
