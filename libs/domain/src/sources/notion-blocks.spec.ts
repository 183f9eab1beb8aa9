import { describe, expect, it } from 'vitest';
import type { NotionBlockNode } from '@rag/contracts';
import { notionBlocksToBlocks, notionPageTitle } from './notion-blocks';

const rt = (text: string) => [{ type: 'text', text: { content: text, link: null }, annotations: {}, plain_text: text, href: null }];
const block = (type: string, body: Record<string, unknown>, children?: NotionBlockNode[]): NotionBlockNode => ({
  object: 'block',
  id: `${type}-${Math.random().toString(16).slice(2)}`,
  type,
  has_children: !!children,
  [type]: body,
  ...(children ? { children } : {}),
});

describe('notionBlocksToBlocks', () => {
  it('maps headings, paragraphs, grouped lists, to-dos, code and tables', () => {
    const blocks = notionBlocksToBlocks([
      block('heading_1', { rich_text: rt('Onboarding') }),
      block('paragraph', { rich_text: [...rt('Welcome '), ...rt('aboard.')] }),
      block('bulleted_list_item', { rich_text: rt('laptop') }, [block('bulleted_list_item', { rich_text: rt('charger') })]),
      block('bulleted_list_item', { rich_text: rt('badge') }),
      block('numbered_list_item', { rich_text: rt('first') }),
      block('to_do', { rich_text: rt('sign NDA'), checked: true }),
      block('divider', {}),
      block('code', { rich_text: rt('SELECT 1;\n'), language: 'sql' }),
      block('table', { table_width: 2, has_column_header: true, has_row_header: false }, [
        block('table_row', { cells: [rt('Team'), rt('Lead')] }),
        block('table_row', { cells: [rt('Search'), rt('Ada')] }),
      ]),
      block('child_page', { title: 'Sub page' }),
      block('column_list', {}, [block('column', {}, [block('quote', { rich_text: rt('Be kind.') })])]),
    ]);
    expect(blocks).toEqual([
      { type: 'heading', level: 1, text: 'Onboarding' },
      { type: 'paragraph', text: 'Welcome aboard.' },
      { type: 'list', ordered: false, items: ['laptop', 'charger', 'badge'] },
      { type: 'list', ordered: true, items: ['first'] },
      { type: 'list', ordered: false, items: ['[x] sign NDA'] },
      { type: 'code', text: 'SELECT 1;', language: 'sql' },
      { type: 'table', header: true, rows: [['Team', 'Lead'], ['Search', 'Ada']] },
      { type: 'paragraph', text: 'Be kind.' },
    ]);
  });

  it('reads the title property', () => {
    expect(notionPageTitle({ properties: { Name: { id: 'title', type: 'title', title: rt('Hand book') }, Tags: { type: 'multi_select' } } })).toBe('Hand book');
  });
});
