export { NotionConnector, NOTION_SCOPE, type NotionConnectorOptions } from './notion.connector';
