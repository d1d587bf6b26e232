#include "redis/async_script.hpp"

#include <memory>
#include <utility>

#include "fencelock/error.hpp"

namespace fencelock::detail {
namespace {

// One script call in flight: what it needs again if Redis lacks the script.
struct ScriptJob {
    AsyncLoop& loop;
    const ScriptSource& script;
    OwnedScriptCall call;
    std::vector<std::string> then;
    ScriptDone done;
    bool resent = false;
};

void send(std::unique_ptr<ScriptJob> job);

void on_replies(std::unique_ptr<ScriptJob> job, std::error_code error, std::vector<Reply>& replies) {
    if (error) return job->done(std::unexpected(error));
    const std::size_t expected = job->then.empty() ? 1 : 2;
    if (replies.size() != expected) return job->done(std::unexpected(make_error_code(errc::protocol_error)));
    // EVAL caches the script, so the next EVALSHA finds it; a second NOSCRIPT is an error.
    if (!job->resent && is_noscript(replies.front())) {
        job->resent = true;
        return send(std::move(job));
    }
    const ScriptCall view = job->call.view();
    BatchThen out;
    if (!job->then.empty()) out.then = std::move(replies.back());
    out.results.push_back(script_result(std::move(replies.front()), view.keys));
    job->done(std::move(out));
}

void send(std::unique_ptr<ScriptJob> job) {
    auto request = std::make_shared<AsyncRequest>();
    const ScriptCall view = job->call.view();
    const std::string numkeys = std::to_string(view.keys.size());
    append_resp(request->wire, eval_argv(job->resent ? "EVAL" : "EVALSHA",
                                         job->resent ? job->script.body : job->script.sha1, numkeys, view));
    request->ends.push_back(request->wire.size());
    if (!job->then.empty()) {
        const std::vector<std::string_view> then(job->then.begin(), job->then.end());
        append_resp(request->wire, then);
        request->ends.push_back(request->wire.size());
    }
    AsyncLoop& loop = job->loop;
    request->on_done = [job = std::move(job)](std::error_code error, std::vector<Reply>& replies) mutable {
        on_replies(std::move(job), error, replies);
    };
    loop.submit(std::move(request));
}

}  // namespace

void run_script_async(AsyncLoop& loop, const ScriptSource& script, OwnedScriptCall call, std::vector<std::string> then,
                      ScriptDone done) {
    send(std::make_unique<ScriptJob>(ScriptJob{loop, script, std::move(call), std::move(then), std::move(done)}));
}

}  // namespace fencelock::detail
