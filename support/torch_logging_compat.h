// c10's logging across LibTorch builds: Debian 12's LibTorch 1.13 logs
// through glog (C10_USE_GLOG), Debian 13's 2.6 through c10's own logger.
#ifndef TALLY_SUPPORT_TORCH_LOGGING_COMPAT_H_
#define TALLY_SUPPORT_TORCH_LOGGING_COMPAT_H_

#include <c10/macros/cmake_macros.h>

#ifdef C10_USE_GLOG
#include <glog/logging.h>
#else
#include <c10/util/Logging.h>
#endif

namespace tally::support::compat {

// Lets only fatal c10 logs through (c10d's socket timeouts log errors, for
// one): a failure is Tally's one line.
inline void OnlyFatalTorchLogs() {
#ifdef C10_USE_GLOG
  FLAGS_minloglevel = google::GLOG_FATAL;
#else
  FLAGS_caffe2_log_level = c10::GLOG_FATAL;
#endif
}

}  // namespace tally::support::compat

#endif  // TALLY_SUPPORT_TORCH_LOGGING_COMPAT_H_
