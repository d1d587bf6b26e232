#pragma once
// Where `fencelock worker` puts what CMD prints: its JSON log (default), or a file
// (--handler-output FILE). The bytes are cut into lines the same way for both (handler_output.hpp).
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/logging.hpp"
#include "fencelock/queue.hpp"
#include "handler_output.hpp"
#include "posix/fd.hpp"

namespace fencelock::cli {

/// One line of the --handler-output file: "<job-id> <stream>: <text>\n". A piece of a line over
/// the cap, which the next line of the same job and stream goes on with, has "+" for ":"
/// ("<job-id> stdout+ <text>"), as `continues` marks it in the log.
std::string handler_output_file_line(std::string_view job_id, std::string_view stream, const OutputLine& line);

/// Opens `path` once, for appending (O_APPEND, created 0644 if missing): the file of
/// --handler-output. Throws InputError{"--handler-output"} naming the path and the cause.
Fd open_handler_output(const std::string& path);

/// Writes handler output lines for every slot of a worker; thread-safe.
class HandlerOutputSink {
public:
    /// Lines are appended to `file` when it is open (open_handler_output), else logged to `log`
    /// as warn `handler_output` objects tagged with the job. A failed write to the file is
    /// logged as an error `handler_output_unwritten` with the job and the cause.
    HandlerOutputSink(JsonLogObserver& log, Fd file) : log_(log), file_(std::move(file)) {}

    void write(const JobContext& ctx, std::string_view stream, const std::vector<OutputLine>& lines);

private:
    void append(const JobContext& ctx, const std::string& text);

    JsonLogObserver& log_;
    Fd file_;
    std::mutex file_mutex_;  // one line, one write: lines of concurrent jobs never mix
};

/// One of CMD's output streams: the read end of its pipe, cut into lines for the sink.
/// Reads never block, so a handler that writes a lot never waits on the worker for long.
class OutputStream {
public:
    OutputStream(std::string_view name, HandlerOutputSink& sink, const JobContext& ctx)
        : name_(name), sink_(sink), ctx_(ctx) {}

    /// Opens the pipe; returns the write end for CMD (close it once CMD runs), or none (errno
    /// says why). Only the worker's end is non-blocking: CMD writes as it always does.
    Fd open();
    /// For poll(): -1 once the pipe reached EOF (poll() skips it).
    int fd() const noexcept { return read_end_.get(); }
    /// Writes the lines of what the pipe holds now. Stops after `budget` bytes, so a stream that
    /// never pauses does not keep the caller from its other duties (stops, exit).
    void drain(std::size_t budget = 256 * 1024);
    /// Writes the last line even without its newline: CMD's group is gone.
    void finish();

private:
    std::string_view name_;
    HandlerOutputSink& sink_;
    const JobContext& ctx_;
    Fd read_end_;
    LineSplitter lines_;
};

}  // namespace fencelock::cli
