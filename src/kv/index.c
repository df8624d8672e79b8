/* The KV store's host index (index.h says what it keeps and why). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "index.h"

struct gio__kv_ent {
	struct gio_kv_u128 key;
	uint64_t seq;
	uint32_t prev, next; /* links of the one list the slot is on: its device's free or LRU list */
	uint32_t pins;
	uint32_t device;
	uint8_t state;
	uint8_t stale;
};

/* Free lists pop at head and push at tail (FIFO); LRU lists keep the most recent at head. */
struct gio__kv_list {
	uint32_t head, tail;
	uint64_t n;
};

struct gio__kv_dev {
	uint32_t base;
	uint64_t slots;
	struct gio__kv_list free, lru;
};

/* tag: the key hash's low 32 bits, so that a probe compares keys only on a likely match, and
 * its home cell (tag & mask: the table has at most 2^32 cells) is known when shifting back. */
struct gio__kv_cell {
	uint32_t id;
	uint32_t tag;
};

struct gio__kv_index {
	struct gio__kv_ent *ent;
	struct gio__kv_cell *table;
	uint64_t mask;
	struct gio__kv_dev *dev;
	uint32_t ndev;
	uint32_t cursor;
	uint64_t capacity;
	uint64_t nfree, nvalid, nwriting, npinned, nlru;
	uint64_t hits, misses, evictions, duplicates, bytes_read, bytes_written, max_seq;
};

static const char *state_name(uint32_t s)
{
	switch (s) {
	case GIO__KV_FREE: return "free";
	case GIO__KV_WRITING: return "being written";
	case GIO__KV_VALID: return "valid";
	default: return "in no known state";
	}
}

static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* Engines' keys are often hashes already, but not always (counters, packed ids): mix both halves. */
static uint64_t key_hash(struct gio_kv_u128 k)
{
	return fmix64(k.lo ^ fmix64(k.hi + 0x9e3779b97f4a7c15ull));
}

static void list_unlink(struct gio__kv_index *ix, struct gio__kv_list *l, uint32_t id)
{
	struct gio__kv_ent *e = &ix->ent[id];
	if (e->prev != GIO__KV_NIL)
		ix->ent[e->prev].next = e->next;
	else
		l->head = e->next;
	if (e->next != GIO__KV_NIL)
		ix->ent[e->next].prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = GIO__KV_NIL;
	l->n--;
}

static void list_push_head(struct gio__kv_index *ix, struct gio__kv_list *l, uint32_t id)
{
	struct gio__kv_ent *e = &ix->ent[id];
	e->prev = GIO__KV_NIL;
	e->next = l->head;
	if (l->head != GIO__KV_NIL)
		ix->ent[l->head].prev = id;
	else
		l->tail = id;
	l->head = id;
	l->n++;
}

static void list_push_tail(struct gio__kv_index *ix, struct gio__kv_list *l, uint32_t id)
{
	struct gio__kv_ent *e = &ix->ent[id];
	e->next = GIO__KV_NIL;
	e->prev = l->tail;
	if (l->tail != GIO__KV_NIL)
		ix->ent[l->tail].next = id;
	else
		l->head = id;
	l->tail = id;
	l->n++;
}

/* The cell of key, or -1. Always ends: the table is at most half full. */
static int64_t hfind(const struct gio__kv_index *ix, struct gio_kv_u128 key, uint64_t h)
{
	const uint32_t tag = (uint32_t)h;
	uint64_t i = h & ix->mask;
	for (;;) {
		const struct gio__kv_cell c = ix->table[i];
		if (c.id == GIO__KV_NIL)
			return -1;
		if (c.tag == tag && gio_kv_u128_eq(ix->ent[c.id].key, key))
			return (int64_t)i;
		i = (i + 1) & ix->mask;
	}
}

static void hinsert(struct gio__kv_index *ix, uint32_t id, uint64_t h)
{
	uint64_t i = h & ix->mask;
	while (ix->table[i].id != GIO__KV_NIL)
		i = (i + 1) & ix->mask;
	ix->table[i].id = id;
	ix->table[i].tag = (uint32_t)h;
}

/* Backward shift: every later cell of the cluster whose home is not between the hole and itself
 * moves into the hole, so that lookups never need tombstones. */
static void hdelete(struct gio__kv_index *ix, uint64_t i)
{
	uint64_t j = i;
	for (;;) {
		j = (j + 1) & ix->mask;
		if (ix->table[j].id == GIO__KV_NIL)
			break;
		const uint64_t home = ix->table[j].tag & ix->mask;
		if (((j - home) & ix->mask) >= ((j - i) & ix->mask)) {
			ix->table[i] = ix->table[j];
			i = j;
		}
	}
	ix->table[i].id = GIO__KV_NIL;
}

static void hremove_key(struct gio__kv_index *ix, struct gio_kv_u128 key)
{
	const int64_t p = hfind(ix, key, key_hash(key));
	if (p >= 0)
		hdelete(ix, (uint64_t)p);
}

static void fill_loc(const struct gio__kv_index *ix, uint32_t id, struct gio__kv_loc *loc)
{
	const uint32_t d = ix->ent[id].device;
	loc->id = id;
	loc->device = d;
	loc->slot = id - ix->dev[d].base;
}

int gio__kv_index_create(struct gio__kv_index **out, const uint64_t *slots, uint32_t ndevices)
{
	struct gio__kv_index *ix;
	uint64_t cap = 0, tsize = 16;
	uint32_t d;
	if (!out || !slots || ndevices == 0 || ndevices > 65536)
		return gio__fail(-EINVAL, "giouring: kv index: %u devices (1 to 65536, with their slot counts)", ndevices);
	for (d = 0; d < ndevices; d++) {
		if (slots[d] > GIO__KV_MAX_CAPACITY - cap)
			return gio__fail(-EINVAL, "giouring: kv index: more than %u slots (device %u brings the total past it)",
					 GIO__KV_MAX_CAPACITY, d);
		cap += slots[d];
	}
	while (tsize < 2 * cap)
		tsize <<= 1;
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return gio__fail(-ENOMEM, "giouring: kv index: no memory");
	ix->ent = calloc(cap ? cap : 1, sizeof(*ix->ent));
	ix->table = malloc(tsize * sizeof(*ix->table));
	ix->dev = calloc(ndevices, sizeof(*ix->dev));
	if (!ix->ent || !ix->table || !ix->dev) {
		gio__kv_index_destroy(ix);
		return gio__fail(-ENOMEM, "giouring: kv index: no memory for %llu slots (%llu hash cells)",
				 (unsigned long long)cap, (unsigned long long)tsize);
	}
	memset(ix->table, 0xff, tsize * sizeof(*ix->table));
	ix->mask = tsize - 1;
	ix->ndev = ndevices;
	ix->capacity = cap;
	cap = 0;
	for (d = 0; d < ndevices; d++) {
		struct gio__kv_dev *dv = &ix->dev[d];
		uint64_t s;
		dv->base = (uint32_t)cap;
		dv->slots = slots[d];
		dv->free.head = dv->free.tail = dv->lru.head = dv->lru.tail = GIO__KV_NIL;
		for (s = 0; s < slots[d]; s++) {
			const uint32_t id = (uint32_t)(cap + s);
			ix->ent[id].device = d;
			ix->ent[id].state = GIO__KV_FREE;
			list_push_tail(ix, &dv->free, id);
		}
		cap += slots[d];
	}
	ix->nfree = cap;
	*out = ix;
	return 0;
}

void gio__kv_index_destroy(struct gio__kv_index *ix)
{
	if (!ix)
		return;
	free(ix->ent);
	free(ix->table);
	free(ix->dev);
	free(ix);
}

int gio__kv_index_lookup(struct gio__kv_index *ix, struct gio_kv_u128 key, int pin, struct gio__kv_loc *loc)
{
	const int64_t p = hfind(ix, key, key_hash(key));
	struct gio__kv_ent *e;
	uint32_t id;
	if (p < 0 || ix->ent[ix->table[p].id].state != GIO__KV_VALID) {
		ix->misses++;
		return -ENOENT;
	}
	id = ix->table[p].id;
	e = &ix->ent[id];
	if (pin) {
		if (e->pins == UINT32_MAX)
			return -EOVERFLOW;
		if (e->pins++ == 0) {
			list_unlink(ix, &ix->dev[e->device].lru, id);
			ix->nlru--;
			ix->npinned++;
		}
	} else if (e->pins == 0 && ix->dev[e->device].lru.head != id) {
		list_unlink(ix, &ix->dev[e->device].lru, id);
		list_push_head(ix, &ix->dev[e->device].lru, id);
	}
	ix->hits++;
	if (loc)
		fill_loc(ix, id, loc);
	return 0;
}

int gio__kv_index_contains(const struct gio__kv_index *ix, struct gio_kv_u128 key)
{
	const int64_t p = hfind(ix, key, key_hash(key));
	return p >= 0 && ix->ent[ix->table[p].id].state == GIO__KV_VALID;
}

/* A slot for one allocation (index.h: a free one first, else the LRU end of a device), off its
 * list, with a's invalidate and eviction fields set; GIO__KV_NIL when there is none. */
static uint32_t take_slot(struct gio__kv_index *ix, struct gio__kv_alloc *a)
{
	uint32_t k;
	if (ix->nfree) {
		for (k = 0; k < ix->ndev; k++) {
			const uint32_t d = (ix->cursor + k) % ix->ndev;
			struct gio__kv_dev *dv = &ix->dev[d];
			if (dv->free.n) {
				const uint32_t id = dv->free.head;
				list_unlink(ix, &dv->free, id);
				ix->nfree--;
				a->invalidate = ix->ent[id].stale;
				ix->cursor = (d + 1) % ix->ndev;
				return id;
			}
		}
	}
	if (ix->nlru) {
		for (k = 0; k < ix->ndev; k++) {
			const uint32_t d = (ix->cursor + k) % ix->ndev;
			struct gio__kv_dev *dv = &ix->dev[d];
			if (dv->lru.n) {
				const uint32_t id = dv->lru.tail;
				struct gio__kv_ent *e = &ix->ent[id];
				list_unlink(ix, &dv->lru, id);
				ix->nlru--;
				hremove_key(ix, e->key);
				ix->nvalid--;
				ix->evictions++;
				a->evicted = 1;
				a->evicted_key = e->key;
				a->invalidate = 1;
				ix->cursor = (d + 1) % ix->ndev;
				return id;
			}
		}
	}
	return GIO__KV_NIL;
}

int gio__kv_index_alloc(struct gio__kv_index *ix, const struct gio_kv_u128 *keys, uint32_t n,
			struct gio__kv_alloc *out)
{
	uint32_t i, done = 0, nospace = 0;
	if (n && (!keys || !out))
		return gio__fail(-EINVAL, "giouring: kv index: alloc of %u keys without keys or results", n);
	if (n > INT32_MAX)
		return gio__fail(-EINVAL, "giouring: kv index: alloc of %u keys: at most %d a call", n, INT32_MAX);
	for (i = 0; i < n; i++) {
		struct gio__kv_alloc *a = &out[i];
		const uint64_t h = key_hash(keys[i]);
		struct gio__kv_ent *e;
		uint32_t id;
		memset(a, 0, sizeof(*a));
		a->loc.id = GIO__KV_NIL;
		a->loc.device = GIO__KV_NIL;
		if (hfind(ix, keys[i], h) >= 0) {
			a->rc = -EEXIST;
			continue;
		}
		id = take_slot(ix, a);
		if (id == GIO__KV_NIL) {
			a->rc = -ENOSPC;
			nospace++;
			continue;
		}
		e = &ix->ent[id];
		e->key = keys[i];
		e->state = GIO__KV_WRITING;
		e->pins = 1;
		ix->npinned++;
		ix->nwriting++;
		hinsert(ix, id, h);
		fill_loc(ix, id, &a->loc);
		done++;
	}
	if (nospace)
		gio__fail(-ENOSPC, "giouring: kv index: %u of %u keys found no slot: none free, and all %llu entries pinned or "
			  "being written", nospace, n, (unsigned long long)(ix->capacity - ix->nfree));
	return (int)done;
}

static int bad_id(const struct gio__kv_index *ix, const char *op, uint32_t id)
{
	if (id < ix->capacity)
		return gio__fail(-EINVAL, "giouring: kv index: %s of slot %u, which is %s with %u pins", op, id,
				 state_name(ix->ent[id].state), ix->ent[id].pins);
	return gio__fail(-EINVAL, "giouring: kv index: %s of slot %u, past the %llu slots", op, id,
			 (unsigned long long)ix->capacity);
}

int gio__kv_index_commit(struct gio__kv_index *ix, uint32_t id, uint64_t seq)
{
	struct gio__kv_ent *e;
	if (id >= ix->capacity || ix->ent[id].state != GIO__KV_WRITING)
		return bad_id(ix, "commit", id);
	if (seq == 0)
		return gio__fail(-EINVAL, "giouring: kv index: commit of slot %u with sequence 0", id);
	e = &ix->ent[id];
	e->state = GIO__KV_VALID;
	e->seq = seq;
	e->stale = 1;
	e->pins = 0;
	ix->npinned--;
	ix->nwriting--;
	ix->nvalid++;
	list_push_head(ix, &ix->dev[e->device].lru, id);
	ix->nlru++;
	if (seq > ix->max_seq)
		ix->max_seq = seq;
	return 0;
}

static void to_free(struct gio__kv_index *ix, uint32_t id)
{
	struct gio__kv_ent *e = &ix->ent[id];
	e->state = GIO__KV_FREE;
	e->stale = 1;
	e->pins = 0;
	list_push_tail(ix, &ix->dev[e->device].free, id);
	ix->nfree++;
}

int gio__kv_index_abort(struct gio__kv_index *ix, uint32_t id)
{
	if (id >= ix->capacity || ix->ent[id].state != GIO__KV_WRITING)
		return bad_id(ix, "abort", id);
	hremove_key(ix, ix->ent[id].key);
	ix->npinned--;
	ix->nwriting--;
	to_free(ix, id);
	return 0;
}

int gio__kv_index_pin(struct gio__kv_index *ix, uint32_t id)
{
	struct gio__kv_ent *e;
	if (id >= ix->capacity || ix->ent[id].state != GIO__KV_VALID)
		return bad_id(ix, "pin", id);
	e = &ix->ent[id];
	if (e->pins == UINT32_MAX)
		return gio__fail(-EOVERFLOW, "giouring: kv index: slot %u already has %u pins", id, e->pins);
	if (e->pins++ == 0) {
		list_unlink(ix, &ix->dev[e->device].lru, id);
		ix->nlru--;
		ix->npinned++;
	}
	return 0;
}

int gio__kv_index_unpin(struct gio__kv_index *ix, uint32_t id)
{
	struct gio__kv_ent *e;
	if (id >= ix->capacity || ix->ent[id].state != GIO__KV_VALID || ix->ent[id].pins == 0)
		return bad_id(ix, "unpin", id);
	e = &ix->ent[id];
	if (--e->pins == 0) {
		list_push_head(ix, &ix->dev[e->device].lru, id);
		ix->nlru++;
		ix->npinned--;
	}
	return 0;
}

int gio__kv_index_remove(struct gio__kv_index *ix, struct gio_kv_u128 key, struct gio__kv_loc *loc)
{
	const int64_t p = hfind(ix, key, key_hash(key));
	struct gio__kv_ent *e;
	uint32_t id;
	if (p < 0)
		return -ENOENT;
	id = ix->table[p].id;
	e = &ix->ent[id];
	if (e->state != GIO__KV_VALID || e->pins)
		return -EBUSY;
	if (loc)
		fill_loc(ix, id, loc);
	hdelete(ix, (uint64_t)p);
	list_unlink(ix, &ix->dev[e->device].lru, id);
	ix->nlru--;
	ix->nvalid--;
	to_free(ix, id);
	return 0;
}

static int slot_id(const struct gio__kv_index *ix, const char *op, uint32_t device, uint64_t slot, uint32_t *id)
{
	*id = GIO__KV_NIL;
	if (device >= ix->ndev)
		return gio__fail(-EINVAL, "giouring: kv index: %s: device %u of %u", op, device, ix->ndev);
	if (slot >= ix->dev[device].slots)
		return gio__fail(-EINVAL, "giouring: kv index: %s: slot %llu of device %u, which has %llu", op,
				 (unsigned long long)slot, device, (unsigned long long)ix->dev[device].slots);
	*id = ix->dev[device].base + (uint32_t)slot;
	return 0;
}

/* A FREE slot becomes VALID with key and seq, at the MRU end (rebuild_done orders them). */
static void free_to_valid(struct gio__kv_index *ix, uint32_t id, struct gio_kv_u128 key, uint64_t seq)
{
	struct gio__kv_ent *e = &ix->ent[id];
	list_unlink(ix, &ix->dev[e->device].free, id);
	ix->nfree--;
	e->key = key;
	e->seq = seq;
	e->state = GIO__KV_VALID;
	e->stale = 1;
	list_push_head(ix, &ix->dev[e->device].lru, id);
	ix->nlru++;
	ix->nvalid++;
}

int gio__kv_index_rebuild_insert(struct gio__kv_index *ix, struct gio_kv_u128 key, uint32_t device, uint64_t slot,
				 uint64_t seq, struct gio__kv_loc *lost)
{
	const uint64_t h = key_hash(key);
	struct gio__kv_ent *e, *o;
	uint32_t id, oid;
	int64_t p;
	int rc = slot_id(ix, "rebuild", device, slot, &id);
	if (rc)
		return rc;
	e = &ix->ent[id];
	if (e->state != GIO__KV_FREE)
		return gio__fail(-EINVAL, "giouring: kv index: rebuild: slot %llu of device %u given twice (it is %s)",
				 (unsigned long long)slot, device, state_name(e->state));
	if (seq == 0)
		return gio__fail(-EINVAL, "giouring: kv index: rebuild: slot %llu of device %u with sequence 0",
				 (unsigned long long)slot, device);
	p = hfind(ix, key, h);
	if (seq > ix->max_seq)
		ix->max_seq = seq;
	if (p < 0) {
		free_to_valid(ix, id, key, seq);
		hinsert(ix, id, h);
		return 0;
	}
	oid = ix->table[p].id;
	o = &ix->ent[oid];
	if (o->state != GIO__KV_VALID || o->pins)
		return gio__fail(-EBUSY, "giouring: kv index: rebuild: the key of slot %llu of device %u is %s elsewhere",
				 (unsigned long long)slot, device, o->state == GIO__KV_VALID ? "pinned" : "being written");
	ix->duplicates++;
	if (seq > o->seq) {
		list_unlink(ix, &ix->dev[o->device].lru, oid);
		ix->nlru--;
		ix->nvalid--;
		to_free(ix, oid);
		free_to_valid(ix, id, key, seq);
		ix->table[p].id = id; /* the same key: the same hash and cell */
		if (lost)
			fill_loc(ix, oid, lost);
	} else {
		e->key = key;
		e->seq = seq;
		e->stale = 1;
		if (lost)
			fill_loc(ix, id, lost);
	}
	return 1;
}

int gio__kv_index_mark_stale(struct gio__kv_index *ix, uint32_t device, uint64_t slot)
{
	uint32_t id;
	int rc = slot_id(ix, "mark stale", device, slot, &id);
	if (rc)
		return rc;
	if (ix->ent[id].state != GIO__KV_FREE)
		return bad_id(ix, "mark stale", id);
	ix->ent[id].stale = 1;
	return 0;
}

int gio__kv_index_mark_clean(struct gio__kv_index *ix, uint32_t id)
{
	if (id >= ix->capacity || ix->ent[id].state != GIO__KV_FREE)
		return bad_id(ix, "mark clean", id);
	ix->ent[id].stale = 0;
	return 0;
}

struct seq_id {
	uint64_t seq;
	uint32_t id;
};

static int by_seq(const void *a, const void *b)
{
	const struct seq_id *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int gio__kv_index_rebuild_done(struct gio__kv_index *ix)
{
	uint64_t most = 0, last_seq = 0;
	struct seq_id *v;
	uint32_t d, last_dev = 0;
	for (d = 0; d < ix->ndev; d++)
		if (ix->dev[d].lru.n > most)
			most = ix->dev[d].lru.n;
	if (most == 0)
		return 0;
	v = malloc(most * sizeof(*v));
	if (!v)
		return gio__fail(-ENOMEM, "giouring: kv index: no memory to order %llu entries", (unsigned long long)most);
	for (d = 0; d < ix->ndev; d++) {
		struct gio__kv_list *l = &ix->dev[d].lru;
		uint64_t n = 0, i;
		uint32_t id;
		for (id = l->head; id != GIO__KV_NIL; id = ix->ent[id].next) {
			v[n].seq = ix->ent[id].seq;
			v[n].id = id;
			n++;
		}
		qsort(v, n, sizeof(*v), by_seq);
		if (n && v[n - 1].seq > last_seq) {
			last_seq = v[n - 1].seq;
			last_dev = d;
		}
		l->head = l->tail = GIO__KV_NIL;
		l->n = 0;
		for (i = 0; i < n; i++)
			list_push_head(ix, l, v[i].id);
	}
	free(v);
	/* Where the last writer's next chunk would have gone: a writer that reopens for every few
	 * chunks keeps the round-robin instead of filling device 0 each time. */
	ix->cursor = (last_dev + 1) % ix->ndev;
	return 0;
}

int gio__kv_index_locate(const struct gio__kv_index *ix, uint32_t device, uint64_t slot, uint32_t *id)
{
	return slot_id(ix, "locate", device, slot, id);
}

int gio__kv_index_peek(const struct gio__kv_index *ix, uint32_t id, struct gio__kv_loc *loc, uint32_t *state,
		       uint32_t *pins, int *stale, struct gio_kv_u128 *key, uint64_t *seq)
{
	const struct gio__kv_ent *e;
	if (id >= ix->capacity)
		return bad_id(ix, "peek", id);
	e = &ix->ent[id];
	if (loc)
		fill_loc(ix, id, loc);
	if (state)
		*state = e->state;
	if (pins)
		*pins = e->pins;
	if (stale)
		*stale = e->stale;
	if (key)
		*key = e->key;
	if (seq)
		*seq = e->seq;
	return 0;
}

void gio__kv_index_add_bytes(struct gio__kv_index *ix, uint64_t read, uint64_t written)
{
	ix->bytes_read += read;
	ix->bytes_written += written;
}

void gio__kv_index_stats(const struct gio__kv_index *ix, struct gio__kv_stats *st)
{
	st->capacity = ix->capacity;
	st->used = ix->nvalid + ix->nwriting;
	st->free = ix->nfree;
	st->valid = ix->nvalid;
	st->writing = ix->nwriting;
	st->pinned = ix->npinned;
	st->hits = ix->hits;
	st->misses = ix->misses;
	st->evictions = ix->evictions;
	st->duplicates = ix->duplicates;
	st->bytes_read = ix->bytes_read;
	st->bytes_written = ix->bytes_written;
	st->max_seq = ix->max_seq;
}

#define BROKEN(...) gio__fail(-EUCLEAN, "giouring: kv index check: " __VA_ARGS__)

/* One device's free or LRU list: links both ways, length, and what every member must be. */
static int check_list(const struct gio__kv_index *ix, uint32_t d, const struct gio__kv_list *l, int lru)
{
	const char *what = lru ? "LRU" : "free";
	uint32_t id, prev = GIO__KV_NIL;
	uint64_t n = 0;
	for (id = l->head; id != GIO__KV_NIL; id = ix->ent[id].next) {
		const struct gio__kv_ent *e;
		if (id >= ix->capacity || n > ix->capacity)
			return BROKEN("device %u's %s list runs past the slots (id %u after %llu)", d, what, id,
				      (unsigned long long)n);
		e = &ix->ent[id];
		if (e->device != d)
			return BROKEN("slot %u of device %u on device %u's %s list", id, e->device, d, what);
		if (e->prev != prev)
			return BROKEN("slot %u's back link on device %u's %s list", id, d, what);
		if (lru ? e->state != GIO__KV_VALID || e->pins : e->state != GIO__KV_FREE)
			return BROKEN("slot %u (%s, %u pins) on device %u's %s list", id, state_name(e->state), e->pins, d,
				      what);
		prev = id;
		n++;
	}
	if (l->tail != prev || l->n != n)
		return BROKEN("device %u's %s list: %llu slots, counted %llu, or a wrong tail", d, what,
			      (unsigned long long)l->n, (unsigned long long)n);
	return 0;
}

int gio__kv_index_check(const struct gio__kv_index *ix)
{
	uint64_t nfree = 0, nvalid = 0, nwriting = 0, npinned = 0, nlru = 0, lfree = 0, llru = 0, cells = 0, i;
	uint32_t d, id;
	int rc;
	if (ix->cursor >= ix->ndev)
		return BROKEN("cursor %u of %u devices", ix->cursor, ix->ndev);
	for (d = 0; d < ix->ndev; d++) {
		const struct gio__kv_dev *dv = &ix->dev[d];
		for (i = 0; i < dv->slots; i++)
			if (ix->ent[dv->base + i].device != d)
				return BROKEN("slot %llu of device %u says device %u", (unsigned long long)i, d,
					      ix->ent[dv->base + i].device);
		if ((rc = check_list(ix, d, &dv->free, 0)) || (rc = check_list(ix, d, &dv->lru, 1)))
			return rc;
		lfree += dv->free.n;
		llru += dv->lru.n;
	}
	for (id = 0; id < ix->capacity; id++) {
		const struct gio__kv_ent *e = &ix->ent[id];
		switch (e->state) {
		case GIO__KV_FREE:
			nfree++;
			if (e->pins)
				return BROKEN("free slot %u has %u pins", id, e->pins);
			break;
		case GIO__KV_WRITING:
			nwriting++;
			if (e->pins != 1)
				return BROKEN("slot %u being written has %u pins, not its writer's one", id, e->pins);
			break;
		case GIO__KV_VALID:
			nvalid++;
			nlru += e->pins == 0;
			break;
		default:
			return BROKEN("slot %u in state %u", id, e->state);
		}
		npinned += e->pins > 0;
		if (e->state != GIO__KV_FREE) {
			const int64_t p = hfind(ix, e->key, key_hash(e->key));
			if (p < 0 || ix->table[p].id != id)
				return BROKEN("the key of slot %u (%s) is not found in the hash table", id, state_name(e->state));
		}
	}
	if (nfree != ix->nfree || nvalid != ix->nvalid || nwriting != ix->nwriting || npinned != ix->npinned ||
	    nlru != ix->nlru || lfree != nfree || llru != nlru || nfree + nvalid + nwriting != ix->capacity)
		return BROKEN("counters: free %llu/%llu (lists %llu), valid %llu/%llu, writing %llu/%llu, pinned %llu/%llu, "
			      "LRU %llu/%llu (lists %llu)",
			      (unsigned long long)nfree, (unsigned long long)ix->nfree, (unsigned long long)lfree,
			      (unsigned long long)nvalid, (unsigned long long)ix->nvalid, (unsigned long long)nwriting,
			      (unsigned long long)ix->nwriting, (unsigned long long)npinned, (unsigned long long)ix->npinned,
			      (unsigned long long)nlru, (unsigned long long)ix->nlru, (unsigned long long)llru);
	for (i = 0; i <= ix->mask; i++) {
		const struct gio__kv_cell c = ix->table[i];
		uint64_t j;
		if (c.id == GIO__KV_NIL)
			continue;
		cells++;
		if (c.id >= ix->capacity || ix->ent[c.id].state == GIO__KV_FREE)
			return BROKEN("hash cell %llu holds slot %u, which is free or out of range", (unsigned long long)i, c.id);
		if (c.tag != (uint32_t)key_hash(ix->ent[c.id].key))
			return BROKEN("hash cell %llu: tag of another key", (unsigned long long)i);
		for (j = c.tag & ix->mask; j != i; j = (j + 1) & ix->mask)
			if (ix->table[j].id == GIO__KV_NIL)
				return BROKEN("hash cell %llu is cut off from its home %llu by an empty cell", (unsigned long long)i,
					      (unsigned long long)(c.tag & ix->mask));
	}
	if (cells != nvalid + nwriting)
		return BROKEN("%llu hash cells for %llu keys", (unsigned long long)cells,
			      (unsigned long long)(nvalid + nwriting));
	return 0;
}
