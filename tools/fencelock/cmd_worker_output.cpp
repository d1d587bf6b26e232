#include "cmd_worker_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cli.hpp"

namespace fencelock::cli {

std::string handler_output_file_line(std::string_view job_id, std::string_view stream, const OutputLine& line) {
    std::string out;
    out.reserve(job_id.size() + stream.size() + line.text.size() + 4);
    out.append(job_id).append(" ").append(stream).append(line.continues ? "+ " : ": ").append(line.text).append("\n");
    return out;
}

Fd open_handler_output(const std::string& path) {
    if (path.empty()) throw InputError{"--handler-output", "must name a file"};
    Fd file(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
    if (file.get() < 0)
        throw InputError{"--handler-output", "cannot open " + path + " for appending: " + std::strerror(errno)};
    return file;
}

void HandlerOutputSink::write(const JobContext& ctx, std::string_view stream, const std::vector<OutputLine>& lines) {
    for (const auto& l : lines) {
        if (file_.get() >= 0) {
            append(ctx, handler_output_file_line(ctx.job.id, stream, l));  // blank lines too: the raw output
            continue;
        }
        if (l.text.empty()) continue;  // a blank line says nothing in a log
        log_.log(LogLevel::warn, "handler_output", ctx.job.resource.str(),
                 {{"job_id", ctx.job.id},
                  {"fence", ctx.fence.value()},
                  {"stream", stream},
                  {"line", l.text},
                  {"continues", l.continues ? LogValue(true) : LogValue()}});
    }
}

void HandlerOutputSink::append(const JobContext& ctx, const std::string& text) {
    std::lock_guard lock(file_mutex_);
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(file_.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            log_.log(LogLevel::error, "handler_output_unwritten", ctx.job.resource.str(),
                     {{"job_id", ctx.job.id}, {"error", std::string(std::strerror(errno))}});
            return;
        }
        done += static_cast<std::size_t>(n);
    }
}

Fd OutputStream::open() {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return Fd{};
    read_end_.reset(ends[0]);
    if (::fcntl(ends[0], F_SETFL, O_NONBLOCK) != 0) {
        const int error = errno;
        ::close(ends[1]);
        errno = error;
        return Fd{};
    }
    return Fd(ends[1]);
}

void OutputStream::drain(std::size_t budget) {
    char buf[64 * 1024];
    while (read_end_.get() >= 0 && budget > 0) {
        const ssize_t n = ::read(read_end_.get(), buf, std::min(sizeof buf, budget));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return;  // EAGAIN: nothing more for now
        if (n == 0) {
            read_end_.reset();  // every writer is gone
            return;
        }
        budget -= static_cast<std::size_t>(n);
        sink_.write(ctx_, name_, lines_.feed(std::string_view(buf, static_cast<std::size_t>(n))));
    }
}

void OutputStream::finish() {
    drain();
    sink_.write(ctx_, name_, lines_.finish());
}

}  // namespace fencelock::cli
