// The slack profiler (giouring/sched/profiler.h): the profile file round trip, and its refusals of
// files cut short at every length, damaged at every byte, of another version, malformed under a
// valid checksum, or measured for another model, GPU or engine; and the driver over a synthetic
// step: medians, spread, cost, and errors named by their grid point.
#include <catch2/catch.hpp>

#include <giouring/host/ctx.h>
#include <giouring/kv/format.h>
#include <giouring/sched/profiler.h>

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct TempDir {
	std::string path;
	TempDir()
	{
		char tmpl[] = "/tmp/gio_sched_prof_XXXXXX";
		REQUIRE(mkdtemp(tmpl) != nullptr);
		path = tmpl;
	}
	~TempDir()
	{
		for (const auto &f : files())
			std::remove((path + "/" + f).c_str());
		rmdir(path.c_str());
	}
	std::vector<std::string> files() const
	{
		std::vector<std::string> out;
		if (DIR *d = opendir(path.c_str())) {
			while (dirent *e = readdir(d))
				if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
					out.push_back(e->d_name);
			closedir(d);
		}
		return out;
	}
	std::string file(const std::string &name) const { return path + "/" + name; }
};

std::string slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream s;
	s << f.rdbuf();
	return s.str();
}

void spill(const std::string &path, const std::string &bytes)
{
	std::ofstream f(path, std::ios::binary | std::ios::trunc);
	f << bytes;
}

// The body of a file (everything before its checksum line) with a fresh checksum line.
std::string reseal(const std::string &body)
{
	char line[32];
	std::snprintf(line, sizeof(line), "crc32c %08x\n", gio_kv_crc32c(0, body.data(), body.size()));
	return body + line;
}

std::string body_of(const std::string &file)
{
	REQUIRE(file.size() > 16);
	return file.substr(0, file.size() - 16);
}

gio_sched_identity ident(const char *model, const char *gpu, const char *engine)
{
	gio_sched_identity id{};
	std::snprintf(id.model, sizeof(id.model), "%s", model);
	std::snprintf(id.gpu, sizeof(id.gpu), "%s", gpu);
	std::snprintf(id.engine, sizeof(id.engine), "%s", engine);
	return id;
}

const gio_sched_identity kId = ident("Llama-3.1-8B bf16 tp1", "NVIDIA H200", "test engine 1.0");

std::unique_ptr<gio_sched_profile> random_table(uint32_t layers, uint32_t ni, uint32_t np, int sm, uint32_t seed)
{
	std::mt19937_64 rng(seed);
	std::vector<uint32_t> in(ni), pre(np);
	uint32_t x = 0;
	for (auto &v : in)
		v = x += 1 + (uint32_t)(rng() % 5000);
	x = 0;
	for (auto &v : pre)
		v = x += (uint32_t)(rng() % 70000) + (x ? 1 : 0);
	auto t = std::make_unique<gio_sched_profile>();
	REQUIRE(gio_sched_profile_init(t.get(), layers, in.data(), ni, pre.data(), np, nullptr) == 0);
	t->has_sm = (uint32_t)sm;
	for (uint32_t l = 0; l < layers; l++)
		for (uint32_t i = 0; i < ni; i++)
			for (uint32_t p = 0; p < np; p++) {
				const uint32_t c = gio_sched_profile_cell(l, i, p);
				t->slack_ns[c] = rng() >> (rng() % 64); // any 64-bit value, UINT64_MAX included
				t->sm[c] = sm ? (uint16_t)rng() : 0;
			}
	t->slack_ns[gio_sched_profile_cell(0, 0, 0)] = UINT64_MAX;
	return t;
}

// Saves a random profile at `path` as kId's and gives the file's bytes.
std::string save_random(const std::string &path, uint32_t layers, uint32_t ni, uint32_t np, int sm, uint32_t seed)
{
	auto t = random_table(layers, ni, np, sm, seed);
	REQUIRE(gio_sched_profile_save(path.c_str(), t.get(), &kId) == 0);
	return slurp(path);
}

void require_same(const gio_sched_profile &a, const gio_sched_profile &b)
{
	REQUIRE(a.layers == b.layers);
	REQUIRE(a.ninput == b.ninput);
	REQUIRE(a.nprefix == b.nprefix);
	REQUIRE(a.has_sm == b.has_sm);
	REQUIRE(std::memcmp(a.input, b.input, sizeof(a.input)) == 0);
	REQUIRE(std::memcmp(a.prefix, b.prefix, sizeof(a.prefix)) == 0);
	REQUIRE(std::memcmp(a.slack_ns, b.slack_ns, sizeof(a.slack_ns)) == 0);
	REQUIRE(std::memcmp(a.sm, b.sm, sizeof(a.sm)) == 0);
}

// A table whose bytes a failed load must leave alone.
std::unique_ptr<gio_sched_profile> sentinel()
{
	auto t = std::make_unique<gio_sched_profile>();
	std::memset(t.get(), 0x5a, sizeof(*t));
	return t;
}

bool untouched(const gio_sched_profile &t)
{
	const auto *p = reinterpret_cast<const unsigned char *>(&t);
	for (size_t i = 0; i < sizeof(t); i++)
		if (p[i] != 0x5a)
			return false;
	return true;
}

bool says(const char *what)
{
	return std::strstr(gio_last_error(), what) != nullptr;
}

} // namespace

TEST_CASE("sched profiler: a profile round-trips through its file, identity and all", "[sched]")
{
	TempDir dir;
	const std::string path = dir.file("h200.profile");
	for (int sm = 0; sm <= 1; sm++) {
		auto t = random_table(GIO_SCHED_LAYERS_MAX, GIO_SCHED_AXIS_MAX, GIO_SCHED_AXIS_MAX, sm, 100 + sm);
		int rc = gio_sched_profile_save(path.c_str(), t.get(), &kId);
		INFO(gio_last_error());
		REQUIRE(rc == 0);
		auto back = std::make_unique<gio_sched_profile>();
		gio_sched_identity got{};
		rc = gio_sched_profile_load(path.c_str(), &kId, back.get(), &got);
		INFO(gio_last_error());
		REQUIRE(rc == 0);
		require_same(*t, *back);
		CHECK(std::string(got.model) == kId.model);
		CHECK(std::string(got.gpu) == kId.gpu);
		CHECK(std::string(got.engine) == kId.engine);
		CHECK(back->alpha == GIO_SCHED_ALPHA_DEFAULT);
		CHECK(back->factor[0] == 1.0);
		CHECK(back->observed[0] == 0);
		CHECK(gio_sched_profile_check(back.get(), nullptr) == 0);
		CHECK(slurp(path).size() < GIO_SCHED_PROFILE_FILE_MAX);
	}
	// The small shape, and no identity expected.
	auto t = random_table(1, 1, 1, 0, 7);
	REQUIRE(gio_sched_profile_save(path.c_str(), t.get(), &kId) == 0);
	auto back = std::make_unique<gio_sched_profile>();
	REQUIRE(gio_sched_profile_load(path.c_str(), nullptr, back.get(), nullptr) == 0);
	require_same(*t, *back);
	// Written through a temporary file renamed over it: nothing else is left in the folder.
	CHECK(dir.files() == std::vector<std::string>{"h200.profile"});
}

TEST_CASE("sched profiler: the file holds each layer's correction folded into its times", "[sched]")
{
	TempDir dir;
	const std::string path = dir.file("p");
	auto t = random_table(4, 3, 5, 0, 8);
	for (uint32_t c = 0; c < GIO_SCHED_PROFILE_CELLS; c++)
		t->slack_ns[c] %= 1u << 30; // so that x 1.25 fits
	t->factor[2] = 1.25;
	t->observed[2] = 17;
	REQUIRE(gio_sched_profile_save(path.c_str(), t.get(), &kId) == 0);
	CHECK(t->factor[2] == 1.25); // the caller's table is not changed
	auto back = std::make_unique<gio_sched_profile>();
	REQUIRE(gio_sched_profile_load(path.c_str(), &kId, back.get(), nullptr) == 0);
	for (uint32_t i = 0; i < 3; i++)
		for (uint32_t p = 0; p < 5; p++) {
			const uint32_t c2 = gio_sched_profile_cell(2, i, p), c1 = gio_sched_profile_cell(1, i, p);
			CHECK(back->slack_ns[c2] == (uint64_t)((double)t->slack_ns[c2] * 1.25 + 0.5));
			CHECK(back->slack_ns[c1] == t->slack_ns[c1]);
		}
	CHECK(back->factor[2] == 1.0);
}

TEST_CASE("sched profiler: the file format as documented", "[sched]")
{
	TempDir dir;
	const std::string path = dir.file("p");
	auto t = std::make_unique<gio_sched_profile>();
	const uint32_t in[] = {128, 1024}, pre[] = {0, 4096, 32768};
	REQUIRE(gio_sched_profile_init(t.get(), 1, in, 2, pre, 3, nullptr) == 0);
	t->has_sm = 1;
	for (uint32_t i = 0; i < 2; i++)
		for (uint32_t p = 0; p < 3; p++) {
			t->slack_ns[gio_sched_profile_cell(0, i, p)] = 1000 * (i + 1) + p;
			t->sm[gio_sched_profile_cell(0, i, p)] = (uint16_t)(8 + p);
		}
	REQUIRE(gio_sched_profile_save(path.c_str(), t.get(), &kId) == 0);
	const std::string body = "giouring-sched-profile 1\n"
				 "model Llama-3.1-8B bf16 tp1\n"
				 "gpu NVIDIA H200\n"
				 "engine test engine 1.0\n"
				 "layers 1\n"
				 "input 2 128 1024\n"
				 "prefix 3 0 4096 32768\n"
				 "sm 1\n"
				 "slack 0 0 1000 1001 1002\n"
				 "slack 0 1 2000 2001 2002\n"
				 "budget 0 0 8 9 10\n"
				 "budget 0 1 8 9 10\n";
	CHECK(slurp(path) == reseal(body));
}

TEST_CASE("sched profiler: a file cut short at any length is refused as such", "[sched]")
{
	TempDir dir;
	const std::string path = dir.file("p"), cut = dir.file("cut");
	const std::string whole = save_random(path, 3, 2, 4, 1, 9);
	auto out = sentinel();
	for (size_t n = 0; n < whole.size(); n++) {
		spill(cut, whole.substr(0, n));
		const int rc = gio_sched_profile_load(cut.c_str(), nullptr, out.get(), nullptr);
		INFO("cut to " << n << " of " << whole.size() << " bytes: " << gio_last_error());
		REQUIRE(rc == -EINVAL);
		REQUIRE((says("cut short") || says("not a scheduler profile") || says("no version")));
		REQUIRE(says(cut.c_str()));
	}
	CHECK(untouched(*out));
}

TEST_CASE("sched profiler: a file damaged at any byte is refused", "[sched]")
{
	TempDir dir;
	const std::string path = dir.file("p"), bad = dir.file("bad");
	const std::string whole = save_random(path, 2, 3, 3, 1, 10);
	const size_t first_line = whole.find('\n') + 1, body = whole.size() - 16;
	auto out = sentinel();
	int damaged = 0;
	for (size_t i = 0; i < whole.size(); i++) {
		const unsigned bit = (unsigned)(i * 5 % 8); // one bit a byte, every position in turn
		{
			std::string b = whole;
			b[i] = (char)(b[i] ^ (1u << bit));
			spill(bad, b);
			const int rc = gio_sched_profile_load(bad.c_str(), nullptr, out.get(), nullptr);
			INFO("byte " << i << " bit " << bit << ": " << gio_last_error());
			REQUIRE(rc < 0);
			if (i >= first_line && i + 1 < body) { // the contents (not the '\n' that ends them): only the checksum can tell
				REQUIRE(rc == -EILSEQ);
				REQUIRE(says("damaged"));
				damaged++;
			}
		}
	}
	CHECK(damaged > 0);
	CHECK(untouched(*out));
}

TEST_CASE("sched profiler: another format version is refused, naming both", "[sched]")
{
	TempDir dir;
	const std::string path = dir.file("p");
	std::string b = body_of(save_random(path, 2, 2, 2, 0, 11));
	REQUIRE(b.rfind("giouring-sched-profile 1\n", 0) == 0);
	b.replace(0, 24, "giouring-sched-profile 2");
	spill(path, reseal(b));
	auto out = sentinel();
	CHECK(gio_sched_profile_load(path.c_str(), nullptr, out.get(), nullptr) == -EOPNOTSUPP);
	INFO(gio_last_error());
	CHECK(says("version 2"));
	CHECK(says("reads version 1"));
	b.replace(0, 24, "giouring-sched-profile 12"); // no checksum needed to tell
	spill(path, b);
	CHECK(gio_sched_profile_load(path.c_str(), nullptr, out.get(), nullptr) == -EOPNOTSUPP);
	CHECK(untouched(*out));
}

TEST_CASE("sched profiler: malformed contents under a valid checksum are refused, naming the line", "[sched]")
{
	TempDir dir;
	const std::string path = dir.file("p");
	auto t = std::make_unique<gio_sched_profile>();
	const uint32_t in[] = {128, 1024}, pre[] = {0, 4096};
	REQUIRE(gio_sched_profile_init(t.get(), 2, in, 2, pre, 2, nullptr) == 0);
	REQUIRE(gio_sched_profile_save(path.c_str(), t.get(), &kId) == 0);
	const std::string good = body_of(slurp(path));
	struct Case {
		const char *from, *to, *message;
	} cases[] = {
		{"layers 2\n", "layers 0\n", "line 5: no layers"},
		{"layers 2\n", "layers 129\n", "line 5: layers above 128"},
		{"layers 2\n", "layers two\n", "line 5: layers is not a decimal number"},
		{"layers 2\n", "layer 2\n", "line 5: expected 'layers ...'"},
		{"input 2 128 1024\n", "input 2 1024 128\n", "line 6: input lengths not strictly increasing"},
		{"input 2 128 1024\n", "input 2 128 1024 5\n", "line 6: more than the format's fields"},
		{"input 2 128 1024\n", "input 3 128 1024\n", "line 6: fewer than the format's fields"},
		{"input 2 128 1024\n", "input 0 \n", "line 6: input has no points"},
		{"input 2 128 1024\n", "input 17 1\n", "line 6: the point count above 16"},
		{"prefix 2 0 4096\n", "prefix 2 0 4294967296\n", "line 7: a length above 4294967295"},
		{"sm 0\n", "sm 2\n", "line 8: sm above 1"},
		{"gpu NVIDIA H200\n", "gpu \n", "line 3: gpu is empty"},
		{"gpu NVIDIA H200\n", "gpu NVIDIA\tH200\n", "line 3: gpu holds a character"},
		{"slack 0 1 0 0\n", "slack 1 1 0 0\n", "line 10: slack of layer 1, input point 1 where layer 0, input point 1"},
		{"slack 0 1 0 0\n", "slack 0 1 0 18446744073709551616\n", "line 10: a time above"},
		{"slack 0 1 0 0\n", "slack 0 1 0  0\n", "line 10: a time is not a decimal number"},
		{"slack 1 1 0 0\n", "slack 1 1 0 0\nslack 1 2 0 0\n", "line 13: more lines than the format's"},
		{"slack 1 1 0 0\n", "", "line 12: the file ends where 'slack' was expected"},
	};
	auto out = sentinel();
	for (const auto &c : cases) {
		std::string b = good;
		const size_t at = b.find(c.from);
		REQUIRE(at != std::string::npos);
		b.replace(at, std::strlen(c.from), c.to);
		spill(path, reseal(b));
		INFO(c.from << " -> " << c.to << ": " << gio_last_error());
		CHECK(gio_sched_profile_load(path.c_str(), nullptr, out.get(), nullptr) == -EINVAL);
		CHECK(says(c.message));
	}
	spill(path, "#!/bin/sh\necho not a profile\n");
	CHECK(gio_sched_profile_load(path.c_str(), nullptr, out.get(), nullptr) == -EINVAL);
	CHECK(says("not a scheduler profile"));
	CHECK(untouched(*out));
	CHECK(gio_sched_profile_load(dir.file("missing").c_str(), nullptr, out.get(), nullptr) == -ENOENT);
	CHECK(says("missing"));
	// Larger than any profile.
	spill(path, "giouring-sched-profile 1\n" + std::string(GIO_SCHED_PROFILE_FILE_MAX, 'x'));
	CHECK(gio_sched_profile_load(path.c_str(), nullptr, out.get(), nullptr) == -EFBIG);
	CHECK(untouched(*out));
}

TEST_CASE("sched profiler: a profile of another model, GPU or engine is refused as stale", "[sched]")
{
	TempDir dir;
	const std::string path = dir.file("p");
	save_random(path, 2, 2, 2, 0, 12);
	const gio_sched_identity others[] = {
		ident("Llama-3.1-70B bf16 tp1", kId.gpu, kId.engine),
		ident(kId.model, "NVIDIA H100 80GB HBM3", kId.engine),
		ident(kId.model, kId.gpu, "test engine 1.1"),
	};
	const char *field[] = {"model", "gpu", "engine"};
	auto out = sentinel();
	for (int i = 0; i < 3; i++) {
		gio_sched_identity got{};
		CHECK(gio_sched_profile_load(path.c_str(), &others[i], out.get(), &got) == -ESTALE);
		INFO(gio_last_error());
		CHECK(says(field[i]));
		CHECK(says(i == 0 ? kId.model : i == 1 ? kId.gpu : kId.engine));
		CHECK(says(i == 0 ? others[i].model : i == 1 ? others[i].gpu : others[i].engine));
		CHECK(std::string(got.gpu) == kId.gpu); // what the file says, for the caller to judge
	}
	CHECK(untouched(*out));
	REQUIRE(gio_sched_profile_load(path.c_str(), nullptr, out.get(), nullptr) == 0); // accepted when none is expected
}

TEST_CASE("sched profiler: save refuses bad tables and identities, and leaves no file", "[sched]")
{
	TempDir dir;
	const std::string path = dir.file("p");
	auto t = random_table(2, 2, 2, 0, 13);
	gio_sched_identity id = kId;
	id.gpu[0] = 0;
	CHECK(gio_sched_profile_save(path.c_str(), t.get(), &id) == -EINVAL);
	CHECK(says("gpu is empty"));
	id = kId;
	id.model[3] = '\n';
	CHECK(gio_sched_profile_save(path.c_str(), t.get(), &id) == -EINVAL);
	CHECK(says("model holds a character that is not printable ASCII"));
	id = kId;
	std::memset(id.engine, 'e', sizeof(id.engine));
	CHECK(gio_sched_profile_save(path.c_str(), t.get(), &id) == -EINVAL);
	CHECK(says("engine has no NUL"));
	t->alpha = 0;
	CHECK(gio_sched_profile_save(path.c_str(), t.get(), &kId) == -EINVAL);
	CHECK(says("alpha"));
	CHECK(gio_sched_profile_save(nullptr, t.get(), &kId) == -EINVAL);
	CHECK(gio_sched_profile_save(path.c_str(), nullptr, &kId) == -EINVAL);
	CHECK(gio_sched_profile_save(path.c_str(), t.get(), nullptr) == -EINVAL);
	CHECK(dir.files().empty());
	t->alpha = 0.5;
	CHECK(gio_sched_profile_save(dir.file("no/such/folder").c_str(), t.get(), &kId) == -ENOENT);
	CHECK(says("no/such/folder"));
}

namespace {

// A synthetic forward step: layer l at (input, prefix) takes the cost model's time; repetition
// `outlier_rep` of every point takes ten times as long; it fails with `fail_rc` at one point.
struct Synthetic {
	uint32_t calls = 0, outlier_rep = UINT32_MAX, fail_input = UINT32_MAX, fail_prefix = UINT32_MAX;
	uint32_t reps = 0, skip_layer = UINT32_MAX;
	int fail_rc = 0;
	static uint64_t truth(uint32_t layer, uint32_t input, uint32_t prefix)
	{
		return 10000 + 500ull * layer + 30ull * input + prefix / 2 + (uint64_t)input * prefix / 2048;
	}
	static int step(void *arg, uint32_t input, uint32_t prefix, uint64_t *layer_ns, uint32_t layers)
	{
		auto *s = static_cast<Synthetic *>(arg);
		const uint32_t rep = s->reps ? s->calls % s->reps : 0;
		s->calls++;
		if (input == s->fail_input && prefix == s->fail_prefix)
			return s->fail_rc;
		for (uint32_t l = 0; l < layers; l++)
			if (l != s->skip_layer)
				layer_ns[l] = truth(l, input, prefix) * (rep == s->outlier_rep ? 10 : 1);
		return 0;
	}
};

const uint32_t kIn[] = {128, 512, 2048}, kPre[] = {0, 8192, 65536, 131072};

gio_sched_profile_params grid(uint32_t reps, uint32_t warmup)
{
	gio_sched_profile_params p{};
	p.layers = 6;
	p.ninput = 3;
	p.nprefix = 4;
	p.reps = reps;
	p.warmup = warmup;
	p.input = kIn;
	p.prefix = kPre;
	return p;
}

} // namespace

TEST_CASE("sched profiler: the driver fills every cell with its median and reports the cost", "[sched]")
{
	Synthetic s;
	s.reps = 5;
	s.outlier_rep = 3; // one slow repetition of five at every point: the median ignores it
	const auto p = grid(5, 0);
	auto t = std::make_unique<gio_sched_profile>();
	gio_sched_profile_stats st{};
	const int rc = gio_sched_profile_run(&p, Synthetic::step, &s, t.get(), &st);
	INFO(gio_last_error());
	REQUIRE(rc == 0);
	CHECK(std::string(gio_last_error()).empty());
	for (uint32_t l = 0; l < 6; l++)
		for (uint32_t i = 0; i < 3; i++)
			for (uint32_t k = 0; k < 4; k++)
				REQUIRE(t->slack_ns[gio_sched_profile_cell(l, i, k)] == Synthetic::truth(l, kIn[i], kPre[k]));
	CHECK(t->layers == 6);
	CHECK(t->ninput == 3);
	CHECK(t->nprefix == 4);
	CHECK(t->has_sm == 0);
	CHECK(gio_sched_profile_check(t.get(), nullptr) == 0);
	CHECK(st.points == 12);
	CHECK(st.reps == 5);
	CHECK(st.step_calls == 60);
	CHECK(s.calls == 60);
	CHECK(st.wall_ns >= st.step_ns);
	CHECK(st.wall_ns > 0);
	CHECK(st.spread_max_ppm == 9000000); // (10x - x) / x
	CHECK(st.spread_mean_ppm == 9000000);

	// Without the outlier there is no spread; warm-up calls are made and not counted.
	Synthetic q;
	const auto p2 = grid(3, 2);
	REQUIRE(gio_sched_profile_run(&p2, Synthetic::step, &q, t.get(), &st) == 0);
	CHECK(st.step_calls == 12 * 5);
	CHECK(st.spread_max_ppm == 0);
	CHECK(st.reps == 3);
	// reps 0 is 5.
	const auto p3 = grid(0, 0);
	REQUIRE(gio_sched_profile_run(&p3, Synthetic::step, &q, t.get(), nullptr) == 0);
	CHECK(q.calls == 60 + 60);
}

TEST_CASE("sched profiler: the spread names its worst cell; an even count takes the middle two", "[sched]")
{
	struct Two {
		uint32_t calls = 0;
		static int step(void *arg, uint32_t input, uint32_t prefix, uint64_t *layer_ns, uint32_t layers)
		{
			auto *s = static_cast<Two *>(arg);
			const uint32_t rep = s->calls++ % 4;
			const uint64_t v[4] = {1000, 1003, 1001, 1100}; // sorted: 1000 1001 1003 1100
			for (uint32_t l = 0; l < layers; l++)
				layer_ns[l] = (input == 512 && prefix == 65536 && l == 4) ? v[rep] : 2000;
			return 0;
		}
	} s;
	const auto p = grid(4, 0);
	auto t = std::make_unique<gio_sched_profile>();
	gio_sched_profile_stats st{};
	REQUIRE(gio_sched_profile_run(&p, Two::step, &s, t.get(), &st) == 0);
	CHECK(t->slack_ns[gio_sched_profile_cell(4, 1, 2)] == 1002); // (1001 + 1003) / 2
	CHECK(st.spread_max_ppm == 99800);                          // 100 / 1002
	CHECK(st.spread_input == 512);
	CHECK(st.spread_prefix == 65536);
	CHECK(st.spread_layer == 4);
	CHECK(st.spread_mean_ppm == 99800 / 72);
}

TEST_CASE("sched profiler: errors stop the run, name the grid point and keep the caller's table", "[sched]")
{
	auto t = sentinel();
	gio_sched_profile_stats st{};
	{
		Synthetic s;
		s.fail_input = 512;
		s.fail_prefix = 65536;
		s.fail_rc = -EIO;
		const auto p = grid(2, 1);
		CHECK(gio_sched_profile_run(&p, Synthetic::step, &s, t.get(), &st) == -EIO);
		INFO(gio_last_error());
		CHECK(says("input 512, prefix 65536 (warm-up 0)"));
		CHECK(says(std::strerror(EIO)));
		CHECK(st.step_calls == 4 * 3 + 2 * 3 + 1); // one input length done, two prefixes of the next, the failing warm-up
		CHECK(st.points == 6);
		CHECK(untouched(*t));
	}
	{
		Synthetic s;
		s.fail_input = 128;
		s.fail_prefix = 0;
		s.fail_rc = 7;
		const auto p = grid(2, 0);
		CHECK(gio_sched_profile_run(&p, Synthetic::step, &s, t.get(), &st) == -EINVAL);
		CHECK(says("returned 7"));
	}
	{
		Synthetic s;
		s.skip_layer = 5;
		const auto p = grid(2, 0);
		CHECK(gio_sched_profile_run(&p, Synthetic::step, &s, t.get(), &st) == -EINVAL);
		CHECK(says("layer 5's time unwritten"));
		CHECK(says("input 128, prefix 0 (repetition 0)"));
	}
	{
		Synthetic s;
		auto p = grid(2, 0);
		p.max_wall_ns = 1;
		CHECK(gio_sched_profile_run(&p, Synthetic::step, &s, t.get(), &st) == -ETIME);
		CHECK(says("time limit"));
		CHECK(says("after 0 of 12 points"));
		CHECK(st.step_calls == 1);
	}
	CHECK(untouched(*t));

	Synthetic s;
	auto p = grid(2, 0);
	CHECK(gio_sched_profile_run(nullptr, Synthetic::step, &s, t.get(), &st) == -EINVAL);
	CHECK(gio_sched_profile_run(&p, nullptr, &s, t.get(), &st) == -EINVAL);
	CHECK(gio_sched_profile_run(&p, Synthetic::step, &s, nullptr, &st) == -EINVAL);
	p.reps = GIO_SCHED_REPS_MAX + 1;
	CHECK(gio_sched_profile_run(&p, Synthetic::step, &s, t.get(), &st) == -EINVAL);
	CHECK(says("repetitions"));
	p = grid(2, 0);
	const uint32_t bad[] = {128, 128, 2048};
	p.input = bad;
	CHECK(gio_sched_profile_run(&p, Synthetic::step, &s, t.get(), &st) == -EINVAL);
	CHECK(says("not strictly increasing"));
	p = grid(2, 0);
	p.layers = GIO_SCHED_LAYERS_MAX + 1;
	CHECK(gio_sched_profile_run(&p, Synthetic::step, &s, t.get(), &st) == -EINVAL);
	CHECK(s.calls == 0);
	CHECK(untouched(*t));
}
