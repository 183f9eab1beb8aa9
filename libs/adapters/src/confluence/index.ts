export { ConfluenceConnector, type ConfluenceConnectorOptions } from './confluence.connector';
