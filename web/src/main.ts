import "./style.css";
import { start } from "./core/app";

const root = document.getElementById("app");
if (root) void start(root);
