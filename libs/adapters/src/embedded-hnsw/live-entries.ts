import type { FilterCondition, Filters, MetadataValue, SearchScope } from '@rag/contracts';
import { matches, matchesCondition, PUBLIC_ACL, type FilterTarget } from '@rag/domain';

/** One label's fields as the store writes them to SQLite (ACL and metadata as their JSON text). */
export interface EntryFields {
  chunk_id: string;
  document_id: string;
  tenant: string;
  version: number;
  /** JSON of the ACL array. */
  acl: string;
  /** JSON of the metadata object. */
  metadata: string;
}

/** What a search hit needs of a label. */
export interface EntryHit {
  chunk_id: string;
  document_id: string;
  version: number;
}

/**
 * The attributes a filter reads except document_id, shared by every chunk that has the same tenant, ACL and metadata
 * (all chunks of one document, usually). `document_id` is always '' here: the document_id condition of a filter is
 * evaluated per label against the interned document id, never against this object.
 */
interface Attrs extends FilterTarget {
  readonly tenant: string;
  readonly acl: readonly string[];
  readonly document_id: '';
  readonly metadata: Readonly<Record<string, MetadataValue>>;
  readonly isPublic: boolean;
  /** The distinct ACL entries (the per-principal counts count a label once per entry). */
  readonly principals: readonly string[];
}

/** Strings or objects shared by reference count: one copy however many labels use it. */
class Interned<T> {
  private readonly ids = new Map<string, number>();
  private readonly keys: (string | undefined)[] = [];
  readonly values: (T | undefined)[] = [];
  private refs = new Int32Array(64);
  private readonly free: number[] = [];

  /** The id for `key`, making its value (once) when it is new; adds one reference. */
  acquire(key: string, make: () => T): number {
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.free.length > 0 ? this.free.pop()! : this.values.length;
      if (id >= this.refs.length) {
        const next = new Int32Array(Math.max(64, this.refs.length * 2));
        next.set(this.refs);
        this.refs = next;
      }
      this.ids.set(key, id);
      this.keys[id] = key;
      this.values[id] = make();
      this.refs[id] = 0;
    }
    this.refs[id] += 1;
    return id;
  }

  /** Drops one reference; the value is forgotten (its id reused later) when none is left. */
  release(id: number): void {
    this.refs[id] -= 1;
    if (this.refs[id]! > 0) return;
    this.ids.delete(this.keys[id]!);
    this.keys[id] = undefined;
    this.values[id] = undefined;
    this.free.push(id);
  }

  /** Ids ever handed out (live or free): the length an array indexed by id must have. */
  get capacity(): number {
    return this.values.length;
  }

  clear(): void {
    this.ids.clear();
    this.keys.length = 0;
    this.values.length = 0;
    this.free.length = 0;
    this.refs.fill(0);
  }
}

const NO_SLOT = -1;
/** Largest ordinal stored as a number; larger ones (and irregular chunk ids) keep their chunk id string. */
const MAX_ORDINAL = 0x7fffffff;
const CANONICAL_ORDINAL = /^(?:0|[1-9][0-9]{0,9})$/;
/** hnswlib-node passes labels as uint32. */
export const MAX_LABEL = 0xffffffff;

function grow<T extends Int32Array | Uint32Array | Float64Array | Uint8Array>(a: T, min: number, fill?: number): T {
  if (a.length >= min) return a;
  const ctor = a.constructor as new (n: number) => T;
  const next = new ctor(Math.max(min, a.length * 2));
  next.set(a);
  if (fill !== undefined) next.fill(fill, a.length);
  return next;
}

/**
 * The in-memory side of the embedded vector store: label → the fields search needs (filter attributes, chunk id,
 * document id, version), exactly the rows of SQLite, kept compact because it lives beside every vector of the graph.
 *
 * - Column arrays indexed by a dense slot (typed arrays: label, version, document, attributes, ordinal) and one
 *   label → slot Int32Array; freed slots are reused. No object per label.
 * - Document ids are interned (one string per document), and so are the filter attributes (tenant + ACL + metadata:
 *   one parsed object per distinct combination, in practice per document or fewer).
 * - The chunk id is not stored when it has the canonical form `${document_id}#v${version}#${ordinal}` (only the
 *   ordinal is); other chunk ids are kept verbatim in a map.
 * - Per-tenant counts (all labels, public labels, and labels naming each principal) tell the search, without looking at
 *   any label, whether a scope can read every label (then no filter is needed at all) and a lower bound of how many
 *   it can read (to size an oversampled unfiltered search).
 */
export class LiveEntries {
  private labelToSlot = new Int32Array(1024).fill(NO_SLOT);
  private slotLabel = new Uint32Array(1024);
  private slotVersion = new Float64Array(1024);
  /** Interned document id; NO_SLOT marks a free slot. */
  private slotDoc = new Int32Array(1024).fill(NO_SLOT);
  private slotAttrs = new Int32Array(1024);
  /** Ordinal of a canonical chunk id, or NO_SLOT when the chunk id is in `oddChunkIds`. */
  private slotOrdinal = new Int32Array(1024);
  private readonly oddChunkIds = new Map<number, string>();
  private readonly freeSlots: number[] = [];
  private slotsUsed = 0;
  private live = 0;

  private readonly docs = new Interned<string>();
  private readonly attrs = new Interned<Attrs>();

  private readonly tenantCount = new Map<string, number>();
  private readonly tenantPublic = new Map<string, number>();
  /** `${tenant}\0${principal}` → non-public labels of the tenant whose ACL names the principal. */
  private readonly principalCount = new Map<string, number>();

  /** Memo of the attribute verdicts of the current predicate (valid where attrStamp equals its stamp). */
  private attrStamp = new Uint32Array(64);
  private attrVerdict = new Uint8Array(64);
  private stamp = 0;

  get size(): number {
    return this.live;
  }

  has(label: number): boolean {
    return this.slotOf(label) !== NO_SLOT;
  }

  /** Adds a label (which must not be present). */
  add(label: number, f: EntryFields): void {
    if (!Number.isInteger(label) || label < 0 || label > MAX_LABEL) throw new Error(`label ${label} is outside 0..${MAX_LABEL}`);
    if (this.has(label)) throw new Error(`label ${label} is already present`);
    const slot = this.freeSlots.length > 0 ? this.freeSlots.pop()! : this.newSlot();
    this.labelToSlot = grow(this.labelToSlot, label + 1, NO_SLOT);
    this.labelToSlot[label] = slot;
    this.slotLabel[slot] = label;
    this.slotVersion[slot] = f.version;
    this.slotDoc[slot] = this.docs.acquire(f.document_id, () => f.document_id);
    const attrsId = this.attrs.acquire(`${f.tenant}\u0000${f.acl}\u0000${f.metadata}`, () => makeAttrs(f));
    this.slotAttrs[slot] = attrsId;
    const ordinal = canonicalOrdinal(f);
    this.slotOrdinal[slot] = ordinal;
    if (ordinal === NO_SLOT) this.oddChunkIds.set(slot, f.chunk_id);
    this.count(this.attrs.values[attrsId]!, 1);
    this.live += 1;
  }

  /** Removes a label; false when it was not present. */
  delete(label: number): boolean {
    const slot = this.slotOf(label);
    if (slot === NO_SLOT) return false;
    this.labelToSlot[label] = NO_SLOT;
    const attrsId = this.slotAttrs[slot]!;
    this.count(this.attrs.values[attrsId]!, -1);
    this.attrs.release(attrsId);
    this.docs.release(this.slotDoc[slot]!);
    this.slotDoc[slot] = NO_SLOT;
    if (this.slotOrdinal[slot] === NO_SLOT) this.oddChunkIds.delete(slot);
    this.freeSlots.push(slot);
    this.live -= 1;
    return true;
  }

  clear(): void {
    this.labelToSlot = new Int32Array(1024).fill(NO_SLOT);
    this.slotDoc.fill(NO_SLOT);
    this.oddChunkIds.clear();
    this.freeSlots.length = 0;
    this.slotsUsed = 0;
    this.live = 0;
    this.docs.clear();
    this.attrs.clear();
    this.tenantCount.clear();
    this.tenantPublic.clear();
    this.principalCount.clear();
  }

  /** Every live label (in slot order). */
  *labels(): IterableIterator<number> {
    for (let s = 0; s < this.slotsUsed; s++) if (this.slotDoc[s] !== NO_SLOT) yield this.slotLabel[s]!;
  }

  maxLabel(): number {
    let max = 0;
    for (let s = 0; s < this.slotsUsed; s++) if (this.slotDoc[s] !== NO_SLOT && this.slotLabel[s]! > max) max = this.slotLabel[s]!;
    return max;
  }

  /** Chunk id, document id and version of a live label; undefined when it is not live. */
  hit(label: number): EntryHit | undefined {
    const slot = this.slotOf(label);
    if (slot === NO_SLOT) return undefined;
    const document_id = this.docs.values[this.slotDoc[slot]!]!;
    const version = this.slotVersion[slot]!;
    const ordinal = this.slotOrdinal[slot]!;
    const chunk_id = ordinal === NO_SLOT ? this.oddChunkIds.get(slot)! : `${document_id}#v${version}#${ordinal}`;
    return { chunk_id, document_id, version };
  }

  /**
   * A lower bound of the live labels `scope` may read (tenant + ACL, filters aside), exact when the scope has no
   * principals, or when no label of the tenant that names a principal of the scope is also readable through another.
   * Equal to `size` only when the scope reads every label.
   */
  readableAtLeast(scope: SearchScope): number {
    const total = this.tenantCount.get(scope.tenant) ?? 0;
    if (scope.principals === undefined || total === 0) return total;
    const pub = this.tenantPublic.get(scope.tenant) ?? 0;
    let best = 0;
    for (const p of scope.principals) {
      const n = this.principalCount.get(`${scope.tenant}\u0000${p}`) ?? 0;
      if (n > best) best = n;
    }
    return pub + best;
  }

  /**
   * The predicate `matches(entry, scope, filters)` over labels, for one search: a label unknown here is never
   * permitted. Each distinct attribute set is judged once per predicate (memoised by a stamp), so a call costs a few
   * typed-array reads; the document_id condition, the only per-document one, is checked per label.
   * Valid until the next mutation (a search is synchronous, so it is never used across one).
   */
  permits(scope: SearchScope, filters?: Filters): (label: number) => boolean {
    this.stamp = (this.stamp + 1) >>> 0;
    if (this.stamp === 0) {
      this.attrStamp.fill(0);
      this.stamp = 1;
    }
    this.attrStamp = grow(this.attrStamp, this.attrs.capacity);
    this.attrVerdict = grow(this.attrVerdict, this.attrs.capacity);
    const stamp = this.stamp;
    const attrStamp = this.attrStamp;
    const attrVerdict = this.attrVerdict;
    const attrs = this.attrs.values;
    const docs = this.docs.values;
    const labelToSlot = this.labelToSlot;
    const slotAttrs = this.slotAttrs;
    const slotDoc = this.slotDoc;
    let docCondition: FilterCondition | undefined;
    let rest: Filters | undefined = filters;
    if (filters && Object.prototype.hasOwnProperty.call(filters, 'document_id')) {
      const { document_id, ...others } = filters;
      docCondition = document_id;
      rest = others;
    }
    return (label: number): boolean => {
      const slot = label < labelToSlot.length ? labelToSlot[label]! : NO_SLOT;
      if (slot === NO_SLOT) return false;
      const a = slotAttrs[slot]!;
      let ok: boolean;
      if (attrStamp[a] === stamp) ok = attrVerdict[a] === 1;
      else {
        ok = matches(attrs[a]!, scope, rest);
        attrStamp[a] = stamp;
        attrVerdict[a] = ok ? 1 : 0;
      }
      if (!ok || docCondition === undefined) return ok;
      return matchesCondition(docs[slotDoc[slot]!], docCondition);
    };
  }

  /**
   * The share of live labels `permitted` accepts, estimated from about `n` of them (one at a random place in each of
   * `n` equal runs of slots; every live label when there are no more than `n` slots): how selective a search's
   * filter is, to size an oversampled search. 0 when no label is live.
   */
  sampleShare(permitted: (label: number) => boolean, n: number): number {
    const used = this.slotsUsed;
    if (this.live === 0 || used === 0) return 0;
    const step = Math.max(1, used / n);
    let seen = 0;
    let ok = 0;
    for (let start = 0; start < used; start += step) {
      const slot = step === 1 ? start : Math.min(used - 1, Math.floor(start + Math.random() * step));
      const label = this.slotLabel[slot]!;
      if (this.labelToSlot[label] !== slot) continue; // a freed slot
      seen++;
      if (permitted(label)) ok++;
    }
    return seen === 0 ? 0 : ok / seen;
  }

  /** What is held, for diagnostics and the ann bench: counts, and the bytes of the typed arrays. */
  stats(): { labels: number; documents: number; attribute_sets: number; irregular_chunk_ids: number; typed_array_bytes: number } {
    let docs = 0;
    for (const d of this.docs.values) if (d !== undefined) docs++;
    let attrs = 0;
    for (const a of this.attrs.values) if (a !== undefined) attrs++;
    const typed = [this.labelToSlot, this.slotLabel, this.slotVersion, this.slotDoc, this.slotAttrs, this.slotOrdinal, this.attrStamp, this.attrVerdict].reduce(
      (n, a) => n + a.byteLength,
      0,
    );
    return { labels: this.live, documents: docs, attribute_sets: attrs, irregular_chunk_ids: this.oddChunkIds.size, typed_array_bytes: typed };
  }

  // ---------------------------------------------------------------------------------------------

  private slotOf(label: number): number {
    return label >= 0 && label < this.labelToSlot.length ? this.labelToSlot[label]! : NO_SLOT;
  }

  private newSlot(): number {
    const slot = this.slotsUsed++;
    if (slot >= this.slotDoc.length) {
      const n = this.slotDoc.length * 2;
      this.slotLabel = grow(this.slotLabel, n);
      this.slotVersion = grow(this.slotVersion, n);
      this.slotDoc = grow(this.slotDoc, n, NO_SLOT);
      this.slotAttrs = grow(this.slotAttrs, n);
      this.slotOrdinal = grow(this.slotOrdinal, n);
    }
    return slot;
  }

  private count(a: Attrs, delta: 1 | -1): void {
    bump(this.tenantCount, a.tenant, delta);
    if (a.isPublic) bump(this.tenantPublic, a.tenant, delta);
    else for (const p of a.principals) bump(this.principalCount, `${a.tenant}\u0000${p}`, delta);
  }
}

function bump(m: Map<string, number>, key: string, delta: number): void {
  const n = (m.get(key) ?? 0) + delta;
  if (n === 0) m.delete(key);
  else m.set(key, n);
}

function makeAttrs(f: EntryFields): Attrs {
  const acl = JSON.parse(f.acl) as string[];
  return {
    tenant: f.tenant,
    acl,
    document_id: '',
    metadata: JSON.parse(f.metadata) as Record<string, MetadataValue>,
    isPublic: acl.includes(PUBLIC_ACL),
    principals: [...new Set(acl)],
  };
}

/** The ordinal when the chunk id is exactly `${document_id}#v${version}#${ordinal}`, else NO_SLOT. */
function canonicalOrdinal(f: EntryFields): number {
  const prefix = `${f.document_id}#v${f.version}#`;
  if (f.chunk_id.length <= prefix.length || !f.chunk_id.startsWith(prefix)) return NO_SLOT;
  const tail = f.chunk_id.slice(prefix.length);
  if (!CANONICAL_ORDINAL.test(tail)) return NO_SLOT;
  const n = Number(tail);
  return n <= MAX_ORDINAL ? n : NO_SLOT;
}
