/* The software target's backing stores: a file (accessed through one descriptor, O_DIRECT where
 * the file system takes it) or zeroed memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../internal.h"
#include "exec.h"

/* Switches the file backing store to one O_DIRECT descriptor for every command, where the file
 * system takes O_DIRECT at offsets of one logical block. One access mode per file: io_uring
 * requests were seen to stall for seconds when one file was read and written through an O_DIRECT
 * and a buffered descriptor at once. Commands whose memory is not aligned for O_DIRECT go through
 * a bounce buffer (executor.c). direct=auto falls back to the page cache with a notice. */
static int use_direct(struct gio__exec *e, const char *path, int direct, uint32_t lba)
{
	struct statx sx;
	uint32_t mem_align = 4096, off_align = 4096;
	const char *why = NULL;
	char whybuf[160];
	int fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		snprintf(whybuf, sizeof(whybuf), "O_DIRECT: %s", strerror(errno));
		why = whybuf;
	} else {
		/* The file system's own rule where it reports one (Linux 6.1), else 4 KiB, which every
		 * block device's logical block divides. */
		if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
			if (sx.stx_dio_offset_align == 0) {
				why = "the file system refuses O_DIRECT on this file";
			} else {
				mem_align = sx.stx_dio_mem_align > 8 ? sx.stx_dio_mem_align : 8;
				off_align = sx.stx_dio_offset_align;
			}
		}
		if (!why && off_align > lba) {
			snprintf(whybuf, sizeof(whybuf), "O_DIRECT needs %u-byte offsets, above lba=%u", off_align, lba);
			why = whybuf;
		}
	}
	if (why) {
		if (fd >= 0)
			close(fd);
		if (direct == GIO__DIRECT_ON)
			return gio__fail(-EINVAL, "giouring: %s: direct=1 but %s", path, why);
		fprintf(stderr, "giouring: notice: %s: %s; using the page cache\n", path, why);
		return 0;
	}
	close(e->fd);
	e->fd = fd;
	e->direct = 1;
	e->mem_align = mem_align;
	return 0;
}

int gio__backing_file(struct gio__exec *e, const char *path, uint64_t size, int direct, uint32_t lba,
		      uint64_t *out_size)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return gio__fail(-errno, "giouring: cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		int rc = -errno;
		close(fd);
		return gio__fail(rc, "giouring: fstat %s: %s", path, strerror(-rc));
	}
	if (size == 0)
		size = (uint64_t)st.st_size;
	if (size == 0) {
		close(fd);
		return gio__fail(-EINVAL, "giouring: %s is empty and the URI gives no size= (e.g. ?size=64G)", path);
	}
	if ((uint64_t)st.st_size < size && ftruncate(fd, (off_t)size)) {
		int rc = -errno;
		close(fd);
		return gio__fail(rc, "giouring: cannot size %s to %" PRIu64 " bytes: %s", path, size, strerror(-rc));
	}
	e->kind = GIO__BACKING_FILE;
	e->fd = fd;
	*out_size = size;
	return direct != GIO__DIRECT_OFF ? use_direct(e, path, direct, lba) : 0;
}

int gio__backing_mem(struct gio__exec *e, uint64_t size)
{
	e->kind = GIO__BACKING_MEM;
	e->mem = aligned_alloc(4096, (size + 4095) & ~(uint64_t)4095);
	if (!e->mem)
		return gio__fail(-ENOMEM, "giouring: no memory for a %" PRIu64 "-byte store", size);
	memset(e->mem, 0, size);
	return 0;
}

int gio__backing_close(struct gio__exec *e, const char *path, int sync)
{
	int rc = 0, i;
	if (sync && e->kind == GIO__BACKING_FILE && e->fd >= 0 && fsync(e->fd))
		rc = gio__fail(-errno, "giouring: fsync %s: %s", path, strerror(errno));
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	for (i = 0; i < 2; i++) {
		if (e->hang_pipe[i] >= 0)
			close(e->hang_pipe[i]);
		e->hang_pipe[i] = -1;
	}
	free(e->mem);
	e->mem = NULL;
	return rc;
}
