import { describe, expect, it } from 'vitest';
import { confluenceStorageToBlocks } from './confluence-storage';
import { confluenceAcl } from './acl';

/** A page body in Confluence storage format, shaped like the Confluence documentation's examples. */
const STORAGE = `<h1>Deploy runbook</h1>
<p>Use the <strong>blue/green</strong> switch. See <ac:link><ri:page ri:content-title="Rollback guide" /><ac:plain-text-link-body><![CDATA[the rollback guide]]></ac:plain-text-link-body></ac:link> first.</p>
<ac:structured-macro ac:name="toc" ac:schema-version="1"><ac:parameter ac:name="maxLevel">2</ac:parameter></ac:structured-macro>
<ac:structured-macro ac:name="info" ac:schema-version="1"><ac:parameter ac:name="title">Heads up</ac:parameter><ac:rich-text-body><p>Deploys freeze on Fridays &amp; holidays.</p></ac:rich-text-body></ac:structured-macro>
<h2>Steps</h2>
<ol><li><p>Drain traffic</p></li><li><p>Switch <code>alias</code></p><ul><li>verify health</li></ul></li></ol>
<ac:structured-macro ac:name="code" ac:schema-version="1" ac:macro-id="d1"><ac:parameter ac:name="language">bash</ac:parameter><ac:parameter ac:name="title">switch.sh</ac:parameter><ac:plain-text-body><![CDATA[if [ "$a" < "$b" ]; then
  kubectl apply -f green.yaml && echo '<ok>'
fi]]></ac:plain-text-body></ac:structured-macro>
<table data-layout="default"><colgroup><col /><col /></colgroup><tbody><tr><th><p>Service</p></th><th><p>Port</p></th></tr><tr><td><p>gateway</p></td><td><p>8080</p></td></tr><tr><td><p>indexer</p></td><td><p>8084</p></td></tr></tbody></table>
<ac:task-list><ac:task><ac:task-id>1</ac:task-id><ac:task-status>incomplete</ac:task-status><ac:task-body>page the on-call</ac:task-body></ac:task></ac:task-list>
<p><ac:image><ri:attachment ri:filename="diagram.png" /></ac:image>Done.<ac:emoticon ac:name="smile" /></p>`;

describe('confluenceStorageToBlocks', () => {
  const blocks = confluenceStorageToBlocks(STORAGE);

  it('keeps headings and paragraphs, rendering links by their text and dropping generated macros', () => {
    expect(blocks[0]).toEqual({ type: 'heading', level: 1, text: 'Deploy runbook' });
    expect(blocks[1]).toEqual({ type: 'paragraph', text: 'Use the blue/green switch. See the rollback guide first.' });
    expect(JSON.stringify(blocks)).not.toContain('maxLevel');
  });

  it('renders rich-text macros (info panel) with their title and decoded body', () => {
    expect(blocks).toContainEqual({ type: 'paragraph', text: 'Heads up' });
    expect(blocks).toContainEqual({ type: 'paragraph', text: 'Deploys freeze on Fridays & holidays.' });
  });

  it('turns the code macro into a code block with its language, CDATA verbatim', () => {
    const code = blocks.find((b) => b.type === 'code');
    expect(code).toEqual({
      type: 'code',
      language: 'bash',
      text: `if [ "$a" < "$b" ]; then\n  kubectl apply -f green.yaml && echo '<ok>'\nfi`,
    });
    expect(JSON.stringify(blocks)).not.toContain('switch.sh');
  });

  it('keeps tables with their header row', () => {
    expect(blocks).toContainEqual({
      type: 'table',
      header: true,
      rows: [
        ['Service', 'Port'],
        ['gateway', '8080'],
        ['indexer', '8084'],
      ],
    });
  });

  it('keeps ordered lists (nested items flattened) and task lists', () => {
    expect(blocks).toContainEqual({ type: 'list', ordered: true, items: ['Drain traffic', 'Switch alias', 'verify health'] });
    expect(blocks).toContainEqual({ type: 'list', ordered: false, items: ['page the on-call'] });
    expect(blocks.at(-1)).toEqual({ type: 'paragraph', text: 'Done.' });
  });

  it('an empty body gives no blocks', () => {
    expect(confluenceStorageToBlocks('')).toEqual([]);
  });
});

describe('confluenceAcl', () => {
  it('maps read restrictions to groups and users, and no restriction to everyone', () => {
    expect(confluenceAcl({ restrictions: { user: { results: [{ accountId: '5b10ac8d82e05b22cc7d4ef5' }] }, group: { results: [{ name: 'eng' }] } } })).toEqual([
      'group:eng',
      'user:5b10ac8d82e05b22cc7d4ef5',
    ]);
    expect(confluenceAcl({ restrictions: { user: { results: [] }, group: { results: [] } } })).toEqual(['*']);
    expect(confluenceAcl(null, ['staff'])).toEqual(['staff']);
  });
});
