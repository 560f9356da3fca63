// banyan's SDK for application authors: components, topics, scopes, payloads, apps.
#pragma once

#include "banyan/broker/error.hpp"
#include "banyan/broker/profile.hpp"
#include "banyan/broker/scope.hpp"
#include "banyan/broker/topic.hpp"
#include "banyan/sdk/app.hpp"
#include "banyan/sdk/component.hpp"
#include "banyan/sdk/context.hpp"
#include "banyan/sdk/error.hpp"
#include "banyan/sdk/payload.hpp"
