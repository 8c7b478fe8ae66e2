// SPDX-License-Identifier: GPL-2.0
/*
 * Encoding and checking of the incfs on-disk format (see format.h).
 *
 * Everything here works on buffers and on a read callback, so the same
 * code serves the mount scan, the KUnit tests and the user-space tools.
 * Nothing read from an image is trusted: every size, offset and link is
 * checked before use.
 */
#include "format.h"

void incfs_sb_init(struct incfs_super_block *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->s_magic = cpu_to_le64(INCFS_MAGIC_NUMBER);
	sb->s_version = cpu_to_le64(INCFS_FORMAT_V1);
	sb->s_super_block_size = cpu_to_le16(sizeof(*sb));
	sb->s_data_block_size = cpu_to_le16(INCFS_DATA_FILE_BLOCK_SIZE);
}

/* The size a record of @type has; 0 for an unknown type. */
size_t incfs_md_size(u8 type)
{
	switch (type) {
	case INCFS_MD_INODE:
		return sizeof(struct incfs_inode);
	case INCFS_MD_BLOCK_MAP:
		return sizeof(struct incfs_blockmap);
	case INCFS_MD_DIR_ACTION:
		return sizeof(struct incfs_dir_action);
	}
	return 0;
}

/*
 * h_next_md_offset is rewritten in place when a record is linked: no CRC.
 * h_record_size must already be checked against the record's type.
 */
u32 incfs_md_crc(const union incfs_md_record *rec)
{
	size_t size = le16_to_cpu(rec->h.h_record_size);
	struct incfs_md_header h = rec->h;
	u32 crc;

	h.h_record_crc = 0;
	h.h_next_md_offset = 0;
	crc = crc32_le(0, (const u8 *)&h, sizeof(h));
	return crc32_le(crc, (const u8 *)rec + sizeof(h), size - sizeof(h));
}

/* Make a record ready to append after the record at @prev. */
void incfs_md_seal(union incfs_md_record *rec, loff_t prev)
{
	rec->h.h_prev_md_offset = cpu_to_le64(prev);
	rec->h.h_next_md_offset = 0;
	rec->h.h_record_crc = cpu_to_le32(incfs_md_crc(rec));
}

static void md_header_init(struct incfs_md_header *h, u8 type)
{
	memset(h, 0, sizeof(*h));
	h->h_md_entry_type = type;
	h->h_record_size = cpu_to_le16(incfs_md_size(type));
}

void incfs_encode_inode(struct incfs_inode *r, u64 ino, u64 size, u16 mode)
{
	memset(r, 0, sizeof(*r));
	md_header_init(&r->i_header, INCFS_MD_INODE);
	r->i_no = cpu_to_le64(ino);
	r->i_size = cpu_to_le64(size);
	r->i_mode = cpu_to_le16(mode);
}

void incfs_encode_blockmap(struct incfs_blockmap *r, u64 ino, loff_t base,
			   u32 count)
{
	memset(r, 0, sizeof(*r));
	md_header_init(&r->m_header, INCFS_MD_BLOCK_MAP);
	r->m_inode = cpu_to_le64(ino);
	r->m_base_offset = cpu_to_le64(base);
	r->m_block_count = cpu_to_le32(count);
}

void incfs_encode_dir_action(struct incfs_dir_action *r, u8 type, u64 dir,
			     u64 child, const char *name, u8 len)
{
	memset(r, 0, sizeof(*r));
	md_header_init(&r->da_header, INCFS_MD_DIR_ACTION);
	r->da_dir_inode = cpu_to_le64(dir);
	r->da_entry_inode = cpu_to_le64(child);
	r->da_type = type;
	r->da_name_len = len;
	memcpy(r->da_name, name, len);
}

void incfs_encode_bme(struct incfs_blockmap_entry *e, loff_t off, u16 size,
		      u16 flags, u32 crc)
{
	e->me_data_offset_lo = cpu_to_le32(lower_32_bits(off));
	e->me_data_offset_hi = cpu_to_le16(upper_32_bits(off));
	e->me_data_size = cpu_to_le16(size);
	e->me_flags = cpu_to_le16(flags);
	e->me_data_crc = cpu_to_le32(crc);
}

/* A name for a directory entry: 1..255 bytes, no '/' or NUL, not . or .. */
bool incfs_name_valid(const char *name, size_t len)
{
	if (len == 0 || len > INCFS_MAX_NAME_LEN)
		return false;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return false;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return false;
	return true;
}

/*
 * Are the @len bytes at @p all zero?  (memchr_inv() would do, but is not
 * in the KMI.)
 */
bool incfs_all_zero(const void *p, size_t len)
{
	const u8 *b = p;

	while (len--)
		if (*b++)
			return false;
	return true;
}

/*
 * Could the @len bytes at @pos, which hold @p, be an in-place update torn
 * by a crash (INCFS_SECTOR_SIZE): the bytes on one side of a sector
 * boundary still zero?  Ask only of a value already found wrong: a whole,
 * right value may have zeros on one side too.
 */
bool incfs_maybe_torn(const void *p, size_t len, loff_t pos)
{
	size_t k = INCFS_SECTOR_SIZE - (pos & (INCFS_SECTOR_SIZE - 1));

	if (k >= len)
		return false;
	return incfs_all_zero(p, k) || incfs_all_zero((const u8 *)p + k, len - k);
}

/*
 * Which bits of a little-endian field at byte @at (@n bytes) of an entry
 * lie in its bytes [@from, @to).
 */
static u64 field_bits(unsigned int at, unsigned int n, unsigned int from,
		      unsigned int to)
{
	u64 mask = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		if (at + i >= from && at + i < to)
			mask |= 0xffULL << (8 * i);
	return mask;
}

/*
 * Could a whole entry for a block of @block_len, written over zeros, have
 * lost its bytes [@from, @to) and left @e?  Only if a valid entry agrees
 * with @e outside them and has a byte that is not zero inside: otherwise
 * losing them changed nothing, and what is wrong with @e is not the
 * tear's doing.  Full blocks are stored at 4096-aligned offsets (data.c,
 * incfs-image), so an offset's low 12 bits are zero in every whole entry
 * of one.
 */
static bool bme_lost(const struct incfs_blockmap_entry *e, unsigned int from,
		     unsigned int to, u32 block_len)
{
	const u64 off_free = field_bits(0, 6, from, to);
	const u16 size_free = field_bits(6, 2, from, to);
	const u16 flags_free = field_bits(8, 2, from, to);
	const bool crc_lost = field_bits(10, 4, from, to);
	const u64 off = incfs_bme_offset(e);
	const u16 size = le16_to_cpu(e->me_data_size);
	const u16 flags = le16_to_cpu(e->me_flags);
	u16 f, s;

	for (f = 0; f <= INCFS_BLOCK_COMPRESSED_LZ4; f += INCFS_BLOCK_COMPRESSED_LZ4) {
		if ((f & ~flags_free) != flags)
			continue;
		for (s = 1; s <= INCFS_DATA_FILE_BLOCK_SIZE; s++) {
			u64 settable = off_free;

			if ((!f && s != block_len) || (s & ~size_free) != size)
				continue;
			if (s == INCFS_DATA_FILE_BLOCK_SIZE) {
				if (off & (INCFS_DATA_FILE_BLOCK_SIZE - 1))
					continue;
				settable &= ~(u64)(INCFS_DATA_FILE_BLOCK_SIZE - 1);
			}
			if ((off | settable) < sizeof(struct incfs_super_block))
				continue;
			if (crc_lost || settable || (f & flags_free) ||
			    (s & size_free))
				return true;
		}
	}
	return false;
}

/*
 * Could blockmap entry @e at @pos, for a block of @block_len, be a write
 * torn by a crash: one side of a sector boundary lost, in a way that
 * explains why @e is wrong (bme_lost())?  Ask only of an entry found
 * wrong: malformed, or with data that fails its CRC.
 */
bool incfs_bme_maybe_torn(const struct incfs_blockmap_entry *e, loff_t pos,
			  u32 block_len)
{
	const unsigned int len = sizeof(*e);
	unsigned int k = INCFS_SECTOR_SIZE - (pos & (INCFS_SECTOR_SIZE - 1));

	if (k >= len)
		return false;
	return (incfs_all_zero(e, k) && bme_lost(e, 0, k, block_len)) ||
	       (incfs_all_zero((const u8 *)e + k, len - k) &&
		bme_lost(e, k, len, block_len));
}

/*
 * Where a record appended at @end goes: there, unless its next link (the
 * one field of a record rewritten in place) would cross a sector
 * boundary, where a crash could tear it; then up to 7 bytes later.  The
 * gap is never read.
 */
loff_t incfs_md_pos(loff_t end)
{
	loff_t link = end + offsetof(struct incfs_md_header, h_next_md_offset);
	loff_t room = INCFS_SECTOR_SIZE - (link & (INCFS_SECTOR_SIZE - 1));

	return room < (loff_t)sizeof(__le64) ? end + room : end;
}

static int walk_fail(struct incfs_walk *w, loff_t off, int err,
		     const char *why)
{
	w->bad_off = off;
	w->why = why;
	return err;
}

/*
 * The record the last link leads to is wrong.  If that link may be torn
 * (images written before incfs_md_pos() can hold links across a sector
 * boundary), the record it was written for was never linked: the chain
 * ends before it (@w->torn set).  A record whose header was read (@read)
 * and names the record before it is that record, damaged: not a tear.
 */
static bool link_torn(struct incfs_walk *w, bool read)
{
	__le64 link = cpu_to_le64(w->next);

	if (read && le64_to_cpu(w->rec.h.h_prev_md_offset) == (u64)w->prev)
		return false;
	if (!incfs_maybe_torn(&link, sizeof(link), w->link_pos))
		return false;
	w->torn = true;
	w->torn_link = true;
	return true;
}

/* 0 (the end of the chain) for a torn link, else the error. */
static int bad_target(struct incfs_walk *w, bool read, loff_t off, int err,
		      const char *why)
{
	return link_torn(w, read) ? 0 : walk_fail(w, off, err, why);
}

static int walk_read(struct incfs_walk *w, void *buf, size_t len, loff_t pos)
{
	ssize_t n = w->read(w->ctx, buf, len, pos);

	if (n < 0)
		return walk_fail(w, pos, n, "read error");
	if (n != (ssize_t)len)
		return walk_fail(w, pos, -EIO, "short read");
	return 0;
}

/*
 * A file shorter than a superblock can only come from a crash while the
 * superblock of a new image was written: its bytes are a prefix of a fresh
 * superblock.  Anything else is not ours.
 */
static int check_short_image(struct incfs_walk *w)
{
	struct incfs_super_block fresh, got;
	int err;

	if (w->size == 0)
		return INCFS_IMAGE_EMPTY;
	err = walk_read(w, &got, w->size, 0);
	if (err)
		return err;
	incfs_sb_init(&fresh);
	if (memcmp(&got, &fresh, w->size))
		return walk_fail(w, 0, -EINVAL, "too short for a superblock");
	return INCFS_IMAGE_EMPTY;
}

/*
 * Check the superblock and get ready to walk the chain.  Returns 0,
 * INCFS_IMAGE_EMPTY when the caller should write a new superblock, or a
 * negative errno with @w->why set.
 */
int incfs_walk_start(struct incfs_walk *w, incfs_read_fn read, void *ctx,
		     loff_t size)
{
	struct incfs_super_block sb;
	int err;

	memset(w, 0, sizeof(*w));
	w->read = read;
	w->ctx = ctx;
	w->size = size;
	if (size < (loff_t)sizeof(sb))
		return check_short_image(w);

	err = walk_read(w, &sb, sizeof(sb), 0);
	if (err)
		return err;
	if (le64_to_cpu(sb.s_magic) != INCFS_MAGIC_NUMBER)
		return walk_fail(w, 0, -EINVAL, "bad magic");
	if (le64_to_cpu(sb.s_version) != INCFS_FORMAT_V1)
		return walk_fail(w, 0, -EINVAL, "unsupported version");
	if (le16_to_cpu(sb.s_super_block_size) != sizeof(sb) ||
	    le16_to_cpu(sb.s_data_block_size) != INCFS_DATA_FILE_BLOCK_SIZE)
		return walk_fail(w, 0, -EINVAL, "bad superblock sizes");
	if (sb.s_flags)
		return walk_fail(w, 0, -EINVAL, "unknown superblock flags");

	w->next = le64_to_cpu(sb.s_first_md_offset);
	w->link_pos = offsetof(struct incfs_super_block, s_first_md_offset);
	w->prev_end = sizeof(sb);
	return 0;
}

/* Reserved bytes of a record (flags, a name's tail) must be zero. */
static bool reserved_zero(const union incfs_md_record *rec)
{
	switch (rec->h.h_md_entry_type) {
	case INCFS_MD_INODE:
		return !rec->inode.i_flags;
	case INCFS_MD_DIR_ACTION:
		return incfs_all_zero(rec->da.da_name + rec->da.da_name_len,
				      INCFS_MAX_NAME_LEN - rec->da.da_name_len);
	}
	return true;
}

/*
 * Read the next record of the chain into @w->rec.  Returns 1 for a record,
 * 0 at the end of the chain (@w->torn tells whether a cut-off record or a
 * torn link ended it), or a negative errno: -EINVAL for a malformed record,
 * -EBADMSG for a CRC mismatch, -EILSEQ for a link that no append could
 * have written.  With @w->go_on, a CRC or prev-link mismatch gives
 * INCFS_WALK_BAD with the record read and the walk ready for the next one.
 */
int incfs_walk_next(struct incfs_walk *w)
{
	loff_t off = w->next;
	int bad = 0;
	size_t size;
	int err;

	if (off == 0)
		return 0;
	if (off < w->prev_end)
		return bad_target(w, false, off, -EILSEQ, "chain points backwards");
	if (off > w->size - (loff_t)sizeof(w->rec.h)) {
		/* Linked, but cut off by a crash: the end of the chain. */
		w->torn = true;
		return 0;
	}
	err = walk_read(w, &w->rec.h, sizeof(w->rec.h), off);
	if (err)
		return err;
	size = incfs_md_size(w->rec.h.h_md_entry_type);
	if (!size)
		return bad_target(w, true, off, -EINVAL, "unknown record type");
	if (le16_to_cpu(w->rec.h.h_record_size) != size)
		return bad_target(w, true, off, -EINVAL, "bad record size");
	if (off > w->size - (loff_t)size) {
		w->torn = true;
		return 0;
	}
	err = walk_read(w, &w->rec, size, off);
	if (err)
		return err;
	if (le32_to_cpu(w->rec.h.h_record_crc) != incfs_md_crc(&w->rec))
		bad = -EBADMSG;
	else if ((loff_t)le64_to_cpu(w->rec.h.h_prev_md_offset) != w->prev)
		bad = -EILSEQ;
	if (bad && link_torn(w, true))
		return 0;
	if (bad)
		bad = walk_fail(w, off, bad, bad == -EBADMSG ? "bad record CRC" :
				"prev link does not match");
	if (bad && !w->go_on)
		return bad;
	if (!bad && !reserved_zero(&w->rec))
		return walk_fail(w, off, -EINVAL, "reserved bytes not zero");

	w->rec_off = off;
	w->prev = off;
	w->link_pos = off + offsetof(struct incfs_md_header, h_next_md_offset);
	w->next = le64_to_cpu(w->rec.h.h_next_md_offset);
	w->gap_start = w->prev_end;
	w->prev_end = off + size;
	return bad ? INCFS_WALK_BAD : 1;
}

/*
 * Check the blockmap record just read against its file's size: the area is
 * appended just before its record, after the previous record, so it can
 * overlap no metadata.
 */
int incfs_check_blockmap(struct incfs_walk *w, u64 file_size)
{
	const struct incfs_blockmap *bm = &w->rec.bm;
	u32 count = le32_to_cpu(bm->m_block_count);
	loff_t base = le64_to_cpu(bm->m_base_offset);

	if (file_size > INCFS_MAX_FILE_SIZE ||
	    count != incfs_blocks_for_size(file_size))
		return walk_fail(w, w->rec_off, -EINVAL,
				 "block count does not match the file size");
	/* base >= gap_start > 0: the sum cannot wrap. */
	if (base < w->gap_start ||
	    (u64)base + (u64)count * sizeof(struct incfs_blockmap_entry) >
	    (u64)w->rec_off)
		return walk_fail(w, w->rec_off, -EINVAL,
				 "blockmap overlaps metadata");
	return 0;
}

/*
 * Check the blockmap entry at @pos of a block whose uncompressed length is
 * @block_len.  Returns INCFS_BME_PRESENT, INCFS_BME_ABSENT, INCFS_BME_TORN
 * (lost in a crash: its data lies past the end of the image, or the entry
 * is malformed where a torn write would leave it so), or -EINVAL.
 */
int incfs_check_bme(const struct incfs_blockmap_entry *e, loff_t pos,
		    loff_t image_size, u32 block_len, const char **why)
{
	loff_t off = incfs_bme_offset(e);
	u16 size = le16_to_cpu(e->me_data_size);
	u16 flags = le16_to_cpu(e->me_flags);

	if (!off && !size && !flags && !e->me_data_crc)
		return INCFS_BME_ABSENT;
	if (off < (loff_t)sizeof(struct incfs_super_block) || !size ||
	    size > INCFS_DATA_FILE_BLOCK_SIZE ||
	    (flags & ~INCFS_BLOCK_COMPRESSED_LZ4) ||
	    (!(flags & INCFS_BLOCK_COMPRESSED_LZ4) && size != block_len)) {
		if (incfs_bme_maybe_torn(e, pos, block_len)) {
			*why = "entry torn by a crash";
			return INCFS_BME_TORN;
		}
		*why = "bad blockmap entry";
		return -EINVAL;
	}
	if (off + size > image_size) {
		*why = "data past the end of the image";
		return INCFS_BME_TORN;
	}
	return INCFS_BME_PRESENT;
}
