/* Command changeCourseCapacity of the DCB example "course subscriptions"
 * (tests/fixtures/dcb-examples/course-subscriptions.json, block course_subscription_02):
 * a defined course gets a new capacity. Module change-course-capacity, version 1.0.0.
 *
 * Input: {"courseId": text, "newCapacity": number}.
 * Decision models courseExists(courseId), courseCapacity(courseId) (course_models.h).
 * Checks, in order:
 *   !courseExists                   -> "Course \"{courseId}\" does not exist"
 *   courseCapacity === newCapacity  -> "New capacity {newCapacity} is the same as the current
 *                                       capacity"
 * then appends CourseCapacityChanged {"courseId", "newCapacity" (as given)} tagged
 * course:{courseId}. */
#include "course_models.h"

enum { COURSE_EXISTS, COURSE_CAPACITY, MODEL_COUNT };

static void bind(dcb_input* input, dcb_model models[MODEL_COUNT]) {
  reef_str course_id = dcb_input_text(input, "courseId");
  models[COURSE_EXISTS] = course_exists(course_id);
  models[COURSE_CAPACITY] = course_capacity(course_id);
}

static reef_cbor init(reef_cbor input, reef_writer* query) {
  dcb_input in = dcb_input_of(input);
  dcb_model models[MODEL_COUNT];
  bind(&in, models);
  return dcb_init(&in, models, MODEL_COUNT, query);
}

static reef_cbor fold(reef_cbor state, reef_cbor input, const reef_event* event) {
  dcb_input in = dcb_input_of(input);
  dcb_model models[MODEL_COUNT];
  bind(&in, models);
  return dcb_fold(state, models, MODEL_COUNT, event);
}

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  dcb_input in = dcb_input_of(input);
  reef_str course_id = dcb_input_text(&in, "courseId");
  reef_cbor new_capacity_item;
  dcb_number new_capacity = dcb_input_number(&in, "newCapacity", &new_capacity_item);
  if (in.error.len > 0) return dcb_reject_input(&in);
  if (!dcb_state_bool(state, "courseExists")) {
    return reef_reject("Course \"%.*s\" does not exist", (int)course_id.len, course_id.ptr);
  }
  if (dcb_number_eq(dcb_state_number(state, "courseCapacity"), new_capacity)) {
    reef_str text = dcb_number_text(new_capacity);
    return reef_reject("New capacity %.*s is the same as the current capacity", (int)text.len,
                       text.ptr);
  }
  reef_writer data = reef_writer_new();
  reef_write_record(&data, 2);
  reef_write_cstr(&data, "courseId");
  reef_write_str(&data, course_id);
  reef_write_cstr(&data, "newCapacity");
  reef_write_cbor(&data, new_capacity_item);
  reef_str tags[] = {course_tag(course_id)};
  return reef_accept("CourseCapacityChanged", 1, tags, reef_writer_finish(&data));
}

REEF_COMMAND(init, fold, decide);
