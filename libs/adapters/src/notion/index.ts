export { NotionConnector, NOTION_SCOPE, type NotionConnectorOptions } from './notion.connector';
export { NotionVerificationTokenFile } from './notion-verification-token.file';
