// What nvme-pci learns of an SR-IOV virtual function before it touches it (src/vfio/sriov.c),
// over a made-up sysfs devices folder: which VF of which PF, why its secondary controller's
// state is unknown, the entry found in a Secondary Controller List, and the messages that name
// the step the PF still owes. The PF's real list is read in the QEMU run (qemu.sriov).
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include <giouring/host/ctx.h>
#include <giouring/nvme/identify.h>

#include "../src/internal.h"

namespace {

// A sysfs devices folder: PF 0000:00:04.0 with VFs 0000:00:04.1 and 0000:00:04.2, and a stray
// 0000:00:04.3 that names the PF but that the PF does not name.
struct FakeSysfs {
	std::string root;
	FakeSysfs()
	{
		char tmpl[] = "/tmp/gio-sriov-XXXXXX";
		REQUIRE(mkdtemp(tmpl));
		root = tmpl;
		for (const char *d : {"0000:00:04.0", "0000:00:04.1", "0000:00:04.2", "0000:00:04.3"})
			REQUIRE(mkdir((root + "/" + d).c_str(), 0755) == 0);
		link("../0000:00:04.1", "0000:00:04.0/virtfn0");
		link("../0000:00:04.2", "0000:00:04.0/virtfn1");
		for (const char *vf : {"0000:00:04.1", "0000:00:04.2", "0000:00:04.3"})
			link("../0000:00:04.0", std::string(vf) + "/physfn");
	}
	void link(const std::string &target, const std::string &at) const
	{
		REQUIRE(symlink(target.c_str(), (root + "/" + at).c_str()) == 0);
	}
	~FakeSysfs()
	{
		std::string cmd = "rm -rf '" + root + "'";
		(void)!system(cmd.c_str());
	}
};

} // namespace

TEST_CASE("sriov: a physical function is no VF", "[sriov]")
{
	FakeSysfs fs;
	gio__sriov_vf vf;
	gio__sriov_probe_at(fs.root.c_str(), "0000:00:04.0", &vf);
	CHECK(vf.is_vf == 0);
	CHECK(gio__sriov_unready("0000:00:04.0", &vf) == 0);
	char d[320] = "x";
	gio__sriov_describe(&vf, d, sizeof(d));
	CHECK(std::string(d).empty());
}

TEST_CASE("sriov: a VF's PF and number; without the PF on nvme its state is unknown, not refused", "[sriov]")
{
	FakeSysfs fs;
	gio__sriov_vf vf;
	gio__sriov_probe_at(fs.root.c_str(), "0000:00:04.2", &vf);
	CHECK(vf.is_vf == 1);
	CHECK(std::string(vf.pf) == "0000:00:04.0");
	CHECK(vf.vfn == 2);
	CHECK(vf.entry == 0);
	CHECK(std::string(vf.why) == "the PF 0000:00:04.0 is not on the kernel's nvme driver");
	// Unknown: the bring-up decides (and open adds which VF it is to its failure).
	CHECK(gio__sriov_unready("0000:00:04.2", &vf) == 0);
	char d[320];
	gio__sriov_describe(&vf, d, sizeof(d));
	CHECK(std::string(d) == "SR-IOV virtual function 2 of 0000:00:04.0 (its secondary controller unknown: the PF "
			       "0000:00:04.0 is not on the kernel's nvme driver)");
}

TEST_CASE("sriov: a VF its PF does not list, and a PF whose controller node is missing", "[sriov]")
{
	FakeSysfs fs;
	gio__sriov_vf vf;
	gio__sriov_probe_at(fs.root.c_str(), "0000:00:04.3", &vf);
	CHECK(vf.is_vf == 1);
	CHECK(vf.vfn == 0);
	CHECK(std::string(vf.why) == "no virtfn link of 0000:00:04.0 names it");
	// The PF on nvme, but its character device absent here.
	REQUIRE(mkdir((fs.root + "/0000:00:04.0/nvme").c_str(), 0755) == 0);
	REQUIRE(mkdir((fs.root + "/0000:00:04.0/nvme/nvme977").c_str(), 0755) == 0);
	gio__sriov_probe_at(fs.root.c_str(), "0000:00:04.1", &vf);
	CHECK(vf.vfn == 1);
	CHECK(vf.entry == 0);
	CHECK(std::string(vf.why) == "the PF's /dev/nvme977 cannot be opened: No such file or directory");
}

TEST_CASE("sriov: the entry of a VF number in a Secondary Controller List", "[sriov]")
{
	static gio_sec_ctrl_list list; // 4096 bytes, zeroed
	gio_sec_ctrl e;
	list.num = 3;
	for (uint16_t i = 0; i < 3; i++) {
		list.sc[i].scid = (uint16_t)(10 + i);
		list.sc[i].vfn = (uint16_t)(i + 1);
		list.sc[i].nvq = (uint16_t)(2 * i);
		list.sc[i].scs = (uint8_t)(i == 1);
	}
	REQUIRE(gio__sriov_find(&list, 2, &e) == 1);
	CHECK(e.scid == 11);
	CHECK(e.nvq == 2);
	CHECK((e.scs & GIO_SCS_ONLINE) == GIO_SCS_ONLINE);
	CHECK(gio__sriov_find(&list, 4, &e) == 0); // beyond num
	list.sc[3].vfn = 4;                         // present in the page, but not counted
	CHECK(gio__sriov_find(&list, 4, &e) == 0);
}

TEST_CASE("sriov: an offline or starved secondary controller is refused with the missing step", "[sriov]")
{
	gio__sriov_vf vf;
	std::memset(&vf, 0, sizeof(vf));
	vf.is_vf = 1;
	std::strcpy(vf.pf, "0000:00:04.0");
	vf.vfn = 1;
	vf.entry = 1;
	vf.scid = 1;
	CHECK(gio__sriov_unready("0000:00:04.1", &vf) == -EIO);
	CHECK(std::string(gio_last_error()) ==
	      "giouring: 0000:00:04.1 is SR-IOV virtual function 1 of 0000:00:04.0, and its secondary controller 1 is "
	      "offline (0 flexible queues, 0 interrupts): the PF must give it at least 2 queues and 1 interrupt, then set it "
	      "online (Virtualization Management), e.g. giouring-sriov setup 0000:00:04.0 1 NSID");
	vf.online = 1; // online with one queue: only the admin queue
	vf.nvq = 1;
	vf.nvi = 1;
	CHECK(gio__sriov_unready("0000:00:04.1", &vf) == -EIO);
	CHECK(std::string(gio_last_error()).find("is online without enough resources (1 flexible queues") != std::string::npos);
	vf.nvq = 2;
	CHECK(gio__sriov_unready("0000:00:04.1", &vf) == 0);
	vf.nvi = 0;
	CHECK(gio__sriov_unready("0000:00:04.1", &vf) == -EIO);
	char d[320];
	vf.nvi = 1;
	gio__sriov_describe(&vf, d, sizeof(d));
	CHECK(std::string(d) == "SR-IOV virtual function 1 of 0000:00:04.0, secondary controller 1");
}
