/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Userspace interface of the Incremental File System (incfs).
 *
 * incfs shows files whose blocks may still be arriving: reads of present
 * blocks are served from a backing file, reads of absent blocks wait until a
 * user-space data loader supplies them through the ".cmd" file in the mount
 * root.  The constants and layouts below are those of the 2019 posting; they
 * are binary compatible with data loaders written against it.
 */
#ifndef _UAPI_LINUX_INCREMENTALFS_H
#define _UAPI_LINUX_INCREMENTALFS_H

#include <linux/ioctl.h>
#include <linux/limits.h>
#include <linux/types.h>

/* ===== constants ===== */
#define INCFS_NAME "incremental-fs"
#define INCFS_MAGIC_NUMBER (0x5346434e49ul)
#define INCFS_DATA_FILE_BLOCK_SIZE 4096
#define INCFS_HEADER_VER 1

#define INCFS_MAX_FILES 1000
#define INCFS_COMMAND_INODE 1
#define INCFS_ROOT_INODE 2

#define INCFS_IOCTL_BASE_CODE 'g'

/* The read log's file in the mount root (see "the read log" below). */
#define INCFS_LOG_FILENAME ".log"

/* ===== ioctl requests on the .cmd file ===== */

/* Change the namespace: create files and directories, add and remove names. */
#define INCFS_IOC_PROCESS_INSTRUCTION \
	_IOWR(INCFS_IOCTL_BASE_CODE, 30, struct incfs_instruction)

enum incfs_compression_alg { COMPRESSION_NONE = 0, COMPRESSION_LZ4 = 1 };

/*
 * A pending read: a read of a block the file system does not have yet.
 * read() on .cmd returns an array of these.
 */
struct incfs_pending_read_info {
	/* Inode number of the file being read. */
	__aligned_u64 file_ino;

	/* Index of the block being read. */
	__u32 block_index;

	/* Serial number of this pending read; grows by one per pending read. */
	__u32 serial_number;
};

/* One data block; write() on .cmd takes an array of these. */
struct incfs_new_data_block {
	/* Inode number of the file the block belongs to. */
	__aligned_u64 file_ino;

	/* Index of the block in the file. */
	__u32 block_index;

	/* Length of the data at .data, at most INCFS_DATA_FILE_BLOCK_SIZE. */
	__u32 data_len;

	/* Pointer to the data; equivalent to __u8 *data. */
	__aligned_u64 data;

	/* How the data is compressed: a value of enum incfs_compression_alg. */
	__u32 compression;

	__u32 reserved1;

	__aligned_u64 reserved2;
};

enum incfs_instruction_type {
	INCFS_INSTRUCTION_NOOP = 0,
	INCFS_INSTRUCTION_NEW_FILE = 1,
	INCFS_INSTRUCTION_ADD_DIR_ENTRY = 3,
	INCFS_INSTRUCTION_REMOVE_DIR_ENTRY = 4,
};

/* INCFS_INSTRUCTION_NEW_FILE: create a file or a directory without a name. */
struct incfs_new_file_instruction {
	/* [out] Inode number of the new file. */
	__aligned_u64 ino_out;

	/* Size of the file in bytes; ignored for a directory. */
	__aligned_u64 size;

	/* S_IFREG or S_IFDIR, and permission bits (masked with 0555). */
	__u16 mode;

	__u16 reserved1;

	__u32 reserved2;

	__aligned_u64 reserved3;

	__aligned_u64 reserved4;

	__aligned_u64 reserved5;

	__aligned_u64 reserved6;

	__aligned_u64 reserved7;
};

/*
 * INCFS_INSTRUCTION_ADD_DIR_ENTRY, INCFS_INSTRUCTION_REMOVE_DIR_ENTRY:
 * add or remove a name (a hard link) for a file in a directory.
 */
struct incfs_dir_entry_instruction {
	/* Inode number of the directory. */
	__aligned_u64 dir_ino;

	/* Inode number of the file or directory named. */
	__aligned_u64 child_ino;

	/* Length of the name, 1 to 255 bytes. */
	__u32 name_len;

	__u32 reserved1;

	/* Pointer to the name's characters; equivalent to char *name. */
	__aligned_u64 name;

	__aligned_u64 reserved2;

	__aligned_u64 reserved3;

	__aligned_u64 reserved4;

	__aligned_u64 reserved5;
};

/* Argument of INCFS_IOC_PROCESS_INSTRUCTION. */
struct incfs_instruction {
	/* INCFS_HEADER_VER */
	__u32 version;

	/* A value of enum incfs_instruction_type. */
	__u32 type;

	union {
		struct incfs_new_file_instruction file;
		struct incfs_dir_entry_instruction dir_entry;

		/* Hard limit on the size of an instruction's body. */
		__u8 reserved[64];
	};
};

/* ===== the read log: the .log file in the mount root ===== */

/*
 * One block read: read() on .log returns an array of these, oldest first.
 * A block is logged when a reader asks incfs for it, that is when it is not
 * in the page cache, whether it is present or still to be delivered.
 */
struct incfs_read_log_record {
	/* Inode number of the file read. */
	__aligned_u64 file_ino;

	/* CLOCK_MONOTONIC time of the read, in microseconds. */
	__aligned_u64 timestamp_us;

	/* Index of the block read. */
	__u32 block_index;

	/* The reader's uid, in the mount's user namespace (overflowuid if none). */
	__u32 uid;

	/* The reader's process id, in the initial pid namespace. */
	__u32 pid;

	__u32 reserved;
};

/* Argument of INCFS_IOC_READ_LOG_STATE. */
struct incfs_read_log_state {
	/* Records logged since the mount. */
	__aligned_u64 logged;

	/* Number (from 0) of the record this open file reads next. */
	__aligned_u64 position;

	/*
	 * Records this open file lost: overwritten in the ring before it read
	 * them.  Its reads skip from the last record it read to the oldest
	 * record the ring still holds.
	 */
	__aligned_u64 lost;

	/* Records the ring holds (the mount option read_log_records). */
	__u32 capacity;

	__u32 reserved;
};

/* On an open .log: where this reader stands. */
#define INCFS_IOC_READ_LOG_STATE \
	_IOR(INCFS_IOCTL_BASE_CODE, 64, struct incfs_read_log_state)

#endif /* _UAPI_LINUX_INCREMENTALFS_H */
