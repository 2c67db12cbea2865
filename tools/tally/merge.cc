#include "tools/tally/merge.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/persist/checkpoint_format.h"
#include "engine/runtime/state_budget.h"
#include "support/status_macros.h"

namespace tally::tools {

bool IsUrl(const std::string& source) {
  return absl::StartsWith(source, "http://") || absl::StartsWith(source, "https://");
}

absl::StatusOr<StateSource> FetchState(const std::string& source, const std::string& auth_token, absl::Duration timeout,
                                       int64_t max_bytes) {
  if (!IsUrl(source)) return ReadStateSource(source, max_bytes);
  auto bad = [&](absl::string_view what) {
    return absl::UnavailableError(absl::StrCat("state source ", source, ": ", what));
  };
  // scheme://host[:port] and the path, /v1/state when none is given.
  const size_t host_at = source.find("://") + 3;
  const size_t path_at = source.find('/', host_at);
  const std::string origin = source.substr(0, path_at);
  const std::string path =
      path_at == std::string::npos || path_at + 1 == source.size() ? "/v1/state" : source.substr(path_at);
  if (origin.size() == host_at) return absl::InvalidArgumentError(absl::StrCat("state source ", source, ": no host"));
  httplib::Client client(origin);
  if (!client.is_valid()) return bad("not a URL this build can reach (http://HOST:PORT)");
  const int64_t ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout));
  client.set_connection_timeout(std::chrono::milliseconds(ms));
  client.set_read_timeout(std::chrono::milliseconds(ms));
  client.set_write_timeout(std::chrono::milliseconds(ms));
  httplib::Headers headers;
  if (!auth_token.empty()) headers.emplace("Authorization", absl::StrCat("Bearer ", auth_token));
  std::string body;
  bool too_big = false;
  auto res = client.Get(path.c_str(), headers, [&](const char* data, size_t n) {
    if (static_cast<int64_t>(body.size() + n) > max_bytes) {
      too_big = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  if (too_big) {
    return absl::ResourceExhaustedError(absl::StrCat("state source ", source, ": the answer is larger than ", max_bytes,
                                                     " bytes (the state budget and 1 MiB of framing)"));
  }
  if (!res) return bad(absl::StrCat("no answer: ", httplib::to_string(res.error())));
  if (res->status != 200) {
    std::string why = body;
    auto json = nlohmann::json::parse(body, nullptr, false);
    if (json.is_object() && json.contains("error") && json["error"].is_string()) why = json["error"];
    return bad(absl::StrCat("HTTP ", res->status, ": ", why.substr(0, 500)));
  }
  return StateSource{source, std::move(body)};
}

absl::StatusOr<std::string> RunMerge(const MergeCommand& command) {
  if (command.sources.empty()) {
    return absl::InvalidArgumentError("no state files or servers to merge (tally merge FILE|http://HOST:PORT ...)");
  }
  if (command.format != "table" && command.format != "json" && command.format != "none") {
    return absl::InvalidArgumentError(absl::StrCat("--format must be table, json or none, got '", command.format, "'"));
  }
  if (command.format == "none" && command.save_state.empty()) {
    return absl::InvalidArgumentError("--format none prints nothing: give --save-state FILE");
  }
  // A source's states must fit the budget, and its framing (signature,
  // specs, shard ids) is small: a source larger than both is refused unread.
  const int64_t max_bytes =
      (command.eval.max_state_bytes > 0 ? command.eval.max_state_bytes : DefaultStateBudget()) + (int64_t{1} << 20);
  // One source at a time, each read capped by the budget: a merge of k
  // sources holds one source's bytes besides the merged states, not k.
  StateMerger merger(command.eval);
  for (const std::string& source : command.sources) {
    TALLY_ASSIGN_OR_RETURN(StateSource s, FetchState(source, command.auth_token, command.timeout, max_bytes));
    TALLY_RETURN_IF_ERROR(merger.Add(s));
  }
  TALLY_ASSIGN_OR_RETURN(MergedStates merged, std::move(merger).Take());
  if (!command.save_state.empty()) {
    TALLY_ASSIGN_OR_RETURN(std::string bytes, SaveState(merged));
    TALLY_RETURN_IF_ERROR(persist::WriteFileAtomically(command.save_state, bytes, "state file"));
  }
  if (command.format == "none") return std::string();
  TALLY_ASSIGN_OR_RETURN(std::vector<EvalResult> results,
                         CollectResults(*merged.program, merged.entries, merged.specs));
  return command.format == "json" ? ResultsToJson(results) + "\n" : ResultsToTable(results);
}

}  // namespace tally::tools
