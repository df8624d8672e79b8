/**
 * @file giouring/sched/profiler.h
 * @brief The slack profiler (host library): measures a slack profile (giouring/sched/profile.h)
 *        with the engine's own forward step over a grid of input and prefix lengths, reports
 *        what that cost, and keeps the profile in a file with the model, GPU and engine it was
 *        measured for.
 *
 * Measuring: gio_sched_profile_run() calls a step function the caller provides once per
 * repetition at each grid point; the step runs one forward pass and fills each layer's compute
 * time (an engine measures with CUDA events around each layer; tests pass a synthetic function).
 * Each cell gets the median of the repetitions; the spread is reported, and so is what
 * profiling cost (wall time, step calls), which Tutti leaves unsaid.
 *
 * The file (docs/scheduler.md, "Profile file") is text: a magic line with a version, the
 * identity strings, the axes, one line of times per layer and input point, and a CRC32C of
 * everything before it. A file that is not a profile, of another version, cut short or damaged
 * is refused with a message naming the problem, and one measured for another model, GPU or
 * engine is refused with `-ESTALE` (or read anyway, when the caller passes no identity to
 * expect, and recalibrated online: gio_sched_profile_observe()).
 */
#ifndef GIOURING_SCHED_PROFILER_H
#define GIOURING_SCHED_PROFILER_H

#include <stdint.h>

#include "../config.h"
#include "profile.h"

GIO_EXTERN_C_BEGIN

/** @brief Bytes of each identity string, its terminating NUL included. */
#define GIO_SCHED_IDENT_BYTES 64u

/** @brief What a profile was measured for: each a NUL-terminated string of 1 to 63 printable
 *  ASCII characters (spaces allowed), compared byte for byte. */
struct gio_sched_identity {
	char model[GIO_SCHED_IDENT_BYTES];  /**< The model, e.g. "Llama-3.1-8B bf16 tp1". */
	char gpu[GIO_SCHED_IDENT_BYTES];    /**< The GPU, e.g. "NVIDIA H200" (cudaGetDeviceProperties' name). */
	char engine[GIO_SCHED_IDENT_BYTES]; /**< The engine and its version, e.g. "vllm 0.6.3". */
};

/** @brief Version of the profile file format that gio_sched_profile_save() writes and
 *  gio_sched_profile_load() reads. */
#define GIO_SCHED_PROFILE_VERSION 1u

/** @brief Largest profile file gio_sched_profile_load() reads (a full profile is about 1.5 MB). */
#define GIO_SCHED_PROFILE_FILE_MAX (8u << 20)

/**
 * @brief Writes a profile to a file: each layer's correction folded into its times
 *        (gio_sched_profile_fold()), so the file holds the best estimate at the time of writing.
 * @param path  the file; written as a temporary file beside it, synced, then renamed over it,
 *              so that a crash leaves the old file or the new one, never a part.
 * @param t     the profile (valid: gio_sched_profile_check()).
 * @param id    what it was measured for (each string 1 to 63 printable ASCII characters).
 * @return 0, or `-EINVAL` (NULL arguments, a profile gio_sched_profile_check() refuses, an
 *         identity string empty, unterminated or with a character that is not printable ASCII),
 *         `-ENOMEM`, or the `-errno` of creating, writing, syncing or renaming the file. The
 *         message names the problem (gio_last_error()).
 *
 * Any thread.
 */
int gio_sched_profile_save(const char *path, const struct gio_sched_profile *t, const struct gio_sched_identity *id);

/**
 * @brief Reads a profile from a file written by gio_sched_profile_save().
 * @param path    the file.
 * @param expect  the identity the caller runs with, or NULL to accept any (then compare @p id).
 * @param t       receives the profile (factors 1, no observations, alpha GIO_SCHED_ALPHA_DEFAULT).
 * @param id      receives the file's identity (may be NULL).
 * @return 0, or
 *   - `-EINVAL`: NULL arguments; not a profile (no magic line); cut short (no checksum line at
 *     the end); a line other than the format's next one, or a number out of range (the message
 *     names the line and what was expected);
 *   - `-EOPNOTSUPP`: a profile of another format version (the message names both);
 *   - `-EILSEQ`: the checksum does not match the contents (the file was damaged);
 *   - `-ESTALE`: measured for another model, GPU or engine than @p expect (the message names the
 *     field and both values); @p id is written, @p t is not;
 *   - `-EFBIG`: larger than GIO_SCHED_PROFILE_FILE_MAX; `-EAGAIN`: the file grew while it was
 *     read (a writer not using gio_sched_profile_save()); `-EIO`: a read error; `-ENOMEM`; the
 *     `-errno` of opening the file.
 *   On failure @p t is not written. The message names the file and the problem.
 *
 * Any thread.
 */
int gio_sched_profile_load(const char *path, const struct gio_sched_identity *expect, struct gio_sched_profile *t,
			   struct gio_sched_identity *id);

/**
 * @brief A forward step the profiler measures: runs one prefill step of @p input_len new tokens
 *        over a cached prefix of @p prefix_len tokens and writes each layer's compute time.
 * @param arg         the caller's argument (gio_sched_profile_run()'s @p arg).
 * @param input_len   new tokens.
 * @param prefix_len  cached tokens.
 * @param layer_ns    receives each layer's compute time in ns, @p layers entries (an entry left
 *                    unwritten fails the run).
 * @param layers      layers of the model.
 * @return 0, or `-errno`, which ends the run and is returned by it.
 */
typedef int (*gio_sched_step_fn)(void *arg, uint32_t input_len, uint32_t prefix_len, uint64_t *layer_ns,
				 uint32_t layers);

/** @brief Most repetitions per grid point. */
#define GIO_SCHED_REPS_MAX 64u

/** @brief What gio_sched_profile_run() measures, and how. */
struct gio_sched_profile_params {
	uint32_t layers;        /**< Layers, 1 to GIO_SCHED_LAYERS_MAX. */
	uint32_t ninput;        /**< Input lengths, 1 to GIO_SCHED_AXIS_MAX. */
	uint32_t nprefix;       /**< Prefix lengths, 1 to GIO_SCHED_AXIS_MAX. */
	uint32_t reps;          /**< Measured steps per grid point, 1 to GIO_SCHED_REPS_MAX (0: 5). */
	uint32_t warmup;        /**< Steps per grid point run first and not counted (first calls compile
				     and allocate). */
	uint32_t reserved;      /**< 0. */
	const uint32_t *input;  /**< The input lengths, strictly increasing. */
	const uint32_t *prefix; /**< The prefix lengths, strictly increasing. */
	uint64_t max_wall_ns;   /**< Give up with `-ETIME` once profiling has taken this long (0: no limit). */
};

/** @brief What profiling cost, and how repeatable its measurements were. */
struct gio_sched_profile_stats {
	uint64_t wall_ns;        /**< The whole run, wall clock. */
	uint64_t step_ns;        /**< Of it, inside the step function. */
	uint64_t step_calls;     /**< Step calls, warm-up ones included. */
	uint32_t points;         /**< Grid points measured. */
	uint32_t reps;           /**< Repetitions per point. */
	uint32_t spread_max_ppm; /**< The largest (max - min) / median of a cell's repetitions, parts per
				      million, saturated at UINT32_MAX (also where a median of 0 had a spread). */
	uint32_t spread_mean_ppm; /**< The mean of that over the cells. */
	uint32_t spread_input;   /**< Input length of the cell with the largest spread. */
	uint32_t spread_prefix;  /**< Its prefix length. */
	uint32_t spread_layer;   /**< Its layer. */
	uint32_t reserved;       /**< 0. */
};

/**
 * @brief Measures a slack profile: at every (input, prefix) of the grid, @p params->warmup steps
 *        and then @p params->reps measured steps; each cell gets the median of its layer's times
 *        (the mean of the middle two for an even count, rounded down).
 * @param params     the grid and repetitions.
 * @param step       the step function.
 * @param arg        passed to @p step.
 * @param table_out  receives the profile (no SM budgets: has_sm 0), written only on success.
 * @param stats_out  receives the cost and spread (may be NULL); on failure, the cost so far.
 * @return 0, or `-EINVAL` (NULL @p params, @p step or @p table_out; a count out of range; an axis
 *         not strictly increasing; a step that returns a positive value or leaves a layer's time
 *         unwritten), `-ETIME` (max_wall_ns passed), `-ENOMEM`, or the `-errno` a step returned.
 *         The message names the grid point (input, prefix, repetition) where it stopped.
 *
 * Any thread; calls @p step from this thread only. Points are measured input length by input
 * length, each prefix length in turn.
 */
int gio_sched_profile_run(const struct gio_sched_profile_params *params, gio_sched_step_fn step, void *arg,
			  struct gio_sched_profile *table_out, struct gio_sched_profile_stats *stats_out);

GIO_EXTERN_C_END

#endif /* GIOURING_SCHED_PROFILER_H */
