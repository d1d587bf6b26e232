#pragma once
/// Umbrella header: everything a user of the lock client needs.
#include "fencelock/admin.hpp"
#include "fencelock/client.hpp"
#include "fencelock/duration.hpp"
#include "fencelock/error.hpp"
#include "fencelock/options.hpp"
#include "fencelock/redis_url.hpp"
#include "fencelock/types.hpp"
#include "fencelock/version.hpp"
