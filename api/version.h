// The version of the Tally library and its command line.
#ifndef TALLY_API_VERSION_H_
#define TALLY_API_VERSION_H_

namespace tally {

// Semantic version: the minor number grows with the library's API.
inline constexpr char kTallyVersion[] = "0.14.0";

}  // namespace tally

#endif  // TALLY_API_VERSION_H_
