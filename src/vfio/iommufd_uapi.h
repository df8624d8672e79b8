/* The iommufd and VFIO device-cdev ioctls the nvme-pci backend uses, declared here because the
 * build machine's kernel headers may predate them (Debian 12 ships 6.1 headers: no
 * <linux/iommufd.h>, no VFIO_DEVICE_BIND_IOMMUFD). The layouts are kernel ABI, fixed once
 * released: include/uapi/linux/iommufd.h and include/uapi/linux/vfio.h of Linux 6.6 (cdev),
 * 6.13 (IOMMU_IOAS_MAP_FILE) and 6.19 (VFIO_DEVICE_FEATURE_DMA_BUF). Prefixed names, so a newer
 * system header cannot clash. Not installed, not part of the API. */
#ifndef GIOURING_SRC_IOMMUFD_UAPI_H
#define GIOURING_SRC_IOMMUFD_UAPI_H

#include <stdint.h>
#include <sys/ioctl.h>

#define GIO__IOMMUFD_TYPE ';'
#define GIO__IOMMU_IOAS_ALLOC _IO(GIO__IOMMUFD_TYPE, 0x81)
#define GIO__IOMMU_IOAS_IOVA_RANGES _IO(GIO__IOMMUFD_TYPE, 0x84)
#define GIO__IOMMU_IOAS_MAP _IO(GIO__IOMMUFD_TYPE, 0x85)
#define GIO__IOMMU_IOAS_UNMAP _IO(GIO__IOMMUFD_TYPE, 0x86)
#define GIO__IOMMU_IOAS_MAP_FILE _IO(GIO__IOMMUFD_TYPE, 0x8f)

struct gio__iommu_ioas_alloc {
	uint32_t size;
	uint32_t flags;
	uint32_t out_ioas_id;
};

struct gio__iommu_iova_range {
	uint64_t start, last; /* inclusive */
};

struct gio__iommu_ioas_iova_ranges {
	uint32_t size;
	uint32_t ioas_id;
	uint32_t num_iovas; /* in: room in allowed_iovas; out: how many there are (EMSGSIZE if more) */
	uint32_t reserved;
	uint64_t allowed_iovas; /* user pointer to struct gio__iommu_iova_range[] */
	uint64_t out_iova_alignment;
};

#define GIO__IOMMU_IOAS_MAP_FIXED_IOVA (1u << 0)
#define GIO__IOMMU_IOAS_MAP_WRITEABLE (1u << 1)
#define GIO__IOMMU_IOAS_MAP_READABLE (1u << 2)

struct gio__iommu_ioas_map {
	uint32_t size;
	uint32_t flags;
	uint32_t ioas_id;
	uint32_t reserved;
	uint64_t user_va;
	uint64_t length;
	uint64_t iova;
};

struct gio__iommu_ioas_unmap {
	uint32_t size;
	uint32_t ioas_id;
	uint64_t iova;
	uint64_t length; /* in: bytes to unmap; out: bytes unmapped */
};

struct gio__iommu_ioas_map_file {
	uint32_t size;
	uint32_t flags;
	uint32_t ioas_id;
	int32_t fd;
	uint64_t start; /* byte offset in the file or dma-buf */
	uint64_t length;
	uint64_t iova;
};

/* VFIO_TYPE ';' and VFIO_BASE 100, as in <linux/vfio.h>. */
#define GIO__VFIO_DEVICE_BIND_IOMMUFD _IO(';', 100 + 18)
#define GIO__VFIO_DEVICE_ATTACH_IOMMUFD_PT _IO(';', 100 + 19)
#define GIO__VFIO_DEVICE_FEATURE_DMA_BUF 11u

struct gio__vfio_device_bind_iommufd {
	uint32_t argsz; /* 16: the Linux 6.6 layout, without the token pointer of later kernels */
	uint32_t flags;
	int32_t iommufd;
	uint32_t out_devid;
};

struct gio__vfio_device_attach_iommufd_pt {
	uint32_t argsz; /* 12: without the PASID of later kernels */
	uint32_t flags;
	uint32_t pt_id;
};

struct gio__vfio_region_dma_range {
	uint64_t offset, length;
};

/* Follows struct vfio_device_feature's header in a VFIO_DEVICE_FEATURE_GET of DMA_BUF. */
struct gio__vfio_device_feature_dma_buf {
	uint32_t region_index;
	uint32_t open_flags;
	uint32_t flags;
	uint32_t nr_ranges;
	struct gio__vfio_region_dma_range ranges[1];
};

#endif
