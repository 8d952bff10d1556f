// The component's entry point: componentize-qjs reads the world's exports
// (`describe`, `configure`, `pricing`) from this module; the SDK builds them
// around the policy class. Only this file imports the host, so the policy's
// tests run natively.

import host from "weft:policy/host@0.3.0";

import { ContextPricing } from "./policy.js";
import * as weft from "./weft-policy.js";

export const { describe, configure, pricing } = weft.pricing.component(ContextPricing, host);
